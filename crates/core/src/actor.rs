//! Who acts: roles of API tokens, the actions they allow, and actor names recorded on events.

use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A role an API token holds (docs/lifecycle.md#concepts). A token has one or more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Drafts posts and edits drafts.
    Writer,
    /// Approves, rejects and unapproves.
    Critic,
    /// Publishes approved posts now.
    Publisher,
    /// Everything, including resolve, requeue, pause, resume and tokens.
    Operator,
}

impl Role {
    /// Every role.
    pub const ALL: [Role; 4] = [Role::Writer, Role::Critic, Role::Publisher, Role::Operator];

    /// The name used in configuration, tokens and JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Writer => "writer",
            Role::Critic => "critic",
            Role::Publisher => "publisher",
            Role::Operator => "operator",
        }
    }

    /// Whether holding `self` is enough for something that needs `needed`.
    pub fn grants(self, needed: Role) -> bool {
        self == needed || self == Role::Operator
    }
}

impl fmt::Display for Role {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A role name that is not one of the four roles.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown role {0:?}: expected writer, critic, publisher or operator")]
pub struct UnknownRole(pub String);

impl FromStr for Role {
    type Err = UnknownRole;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Role::ALL
            .into_iter()
            .find(|role| role.as_str() == s.trim())
            .ok_or_else(|| UnknownRole(s.to_owned()))
    }
}

/// The roles a principal holds. Never empty when built by [`RoleSet::parse_list`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RoleSet(BTreeSet<Role>);

impl RoleSet {
    /// A set of the given roles.
    pub fn of(roles: &[Role]) -> Self {
        RoleSet(roles.iter().copied().collect())
    }

    /// Parses `writer,critic` (comma separated, at least one).
    pub fn parse_list(list: &str) -> Result<Self, UnknownRole> {
        let roles = list
            .split(',')
            .filter(|part| !part.trim().is_empty())
            .map(str::parse)
            .collect::<Result<BTreeSet<Role>, _>>()?;
        if roles.is_empty() {
            return Err(UnknownRole(list.to_owned()));
        }
        Ok(RoleSet(roles))
    }

    /// Whether any held role grants `needed`.
    pub fn grants(&self, needed: Role) -> bool {
        self.0.iter().any(|held| held.grants(needed))
    }

    /// The held roles in a stable order.
    pub fn iter(&self) -> impl Iterator<Item = Role> + '_ {
        self.0.iter().copied()
    }

    /// `writer,critic`.
    pub fn to_list(&self) -> String {
        self.iter().map(Role::as_str).collect::<Vec<_>>().join(",")
    }
}

/// What a principal asks to do, for role checks at every front end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Read posts, events, quota and channels.
    Read,
    /// Draft a post.
    Create,
    /// Edit a draft (an approved post first returns to draft).
    Edit,
    /// Discard a draft.
    Discard,
    /// Approve a draft.
    Approve,
    /// Reject a draft or an approved post.
    Reject,
    /// Withdraw an approval.
    Unapprove,
    /// Publish an approved post now.
    Publish,
    /// Settle a `needs_review` post.
    Resolve,
    /// Return a failed post to the queue.
    Requeue,
    /// Pause or resume publishing.
    Pause,
    /// Add a note to a post.
    Note,
    /// Release a quarantined post back to a plain draft.
    Release,
    /// Create, list and revoke API tokens.
    ManageTokens,
}

impl Action {
    /// The roles that allow this action; holding any of them (or `operator`) is enough.
    pub fn roles(self) -> &'static [Role] {
        use Role::*;
        match self {
            Action::Read => &[Writer, Critic, Publisher, Operator],
            Action::Create | Action::Edit | Action::Discard => &[Writer],
            Action::Approve | Action::Reject | Action::Unapprove => &[Critic],
            Action::Publish => &[Publisher],
            Action::Resolve
            | Action::Requeue
            | Action::Pause
            | Action::Note
            | Action::Release
            | Action::ManageTokens => &[Operator],
        }
    }

    /// Whether `roles` allow this action.
    pub fn allowed_for(self, roles: &RoleSet) -> bool {
        self.roles().iter().any(|needed| roles.grants(*needed))
    }

    /// A short description for refusals: "approve posts".
    pub fn describe(self) -> &'static str {
        match self {
            Action::Read => "read the ledger",
            Action::Create => "draft posts",
            Action::Edit => "edit drafts",
            Action::Discard => "discard drafts",
            Action::Approve => "approve posts",
            Action::Reject => "reject posts",
            Action::Unapprove => "unapprove posts",
            Action::Publish => "publish posts",
            Action::Resolve => "resolve posts that need review",
            Action::Requeue => "requeue failed posts",
            Action::Pause => "pause or resume publishing",
            Action::Note => "add notes to posts",
            Action::Release => "release quarantined posts",
            Action::ManageTokens => "manage API tokens",
        }
    }
}

/// Who did something, as recorded on every event (docs/lifecycle.md#concepts).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Actor {
    /// The local command line, acting as operator.
    Cli,
    /// An API or MCP client, by token name.
    Token(String),
    /// The guarded publish path, by worker id.
    Dispatcher(String),
    /// The lease reaper.
    Reaper,
    /// The reconciler.
    Reconciler,
    /// The slot scheduler.
    Scheduler,
    /// A configured auto-approve principal, by its name (`auto-approver`).
    AutoApprover(String),
}

impl fmt::Display for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Actor::Cli => f.write_str("cli"),
            Actor::Token(name) => write!(f, "token:{name}"),
            Actor::Dispatcher(worker) => write!(f, "dispatcher:{worker}"),
            Actor::Reaper => f.write_str("reaper"),
            Actor::Reconciler => f.write_str("reconciler"),
            Actor::Scheduler => f.write_str("scheduler"),
            Actor::AutoApprover(name) => f.write_str(name),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operator_holds_every_role() {
        let operator = RoleSet::of(&[Role::Operator]);
        for role in Role::ALL {
            assert!(operator.grants(role));
        }
        let writer = RoleSet::of(&[Role::Writer]);
        assert!(writer.grants(Role::Writer));
        assert!(!writer.grants(Role::Critic));
    }

    #[test]
    fn actions_need_their_roles() {
        let writer = RoleSet::of(&[Role::Writer]);
        let critic = RoleSet::of(&[Role::Critic]);
        let publisher = RoleSet::of(&[Role::Publisher]);
        assert!(Action::Create.allowed_for(&writer));
        assert!(!Action::Approve.allowed_for(&writer));
        assert!(Action::Approve.allowed_for(&critic));
        assert!(!Action::Publish.allowed_for(&critic));
        assert!(Action::Publish.allowed_for(&publisher));
        assert!(!Action::Pause.allowed_for(&publisher));
        for role in Role::ALL {
            assert!(Action::Read.allowed_for(&RoleSet::of(&[role])));
        }
    }

    #[test]
    fn role_lists_parse() {
        let roles = RoleSet::parse_list("writer, critic").unwrap();
        assert_eq!(roles.to_list(), "writer,critic");
        assert!(RoleSet::parse_list("").is_err());
        assert!(RoleSet::parse_list("writer,admin").is_err());
    }

    #[test]
    fn actors_render_as_spec_names() {
        assert_eq!(Actor::Cli.to_string(), "cli");
        assert_eq!(Actor::Token("agent".into()).to_string(), "token:agent");
        assert_eq!(Actor::Dispatcher("w1".into()).to_string(), "dispatcher:w1");
        assert_eq!(
            Actor::AutoApprover("auto-approver".into()).to_string(),
            "auto-approver"
        );
    }
}
