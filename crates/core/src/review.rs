//! The critic's workflow as pure rules: rubrics and their hashes, verdicts and their
//! reasons, how many passes approve a post (`approvals_required`), how many fails
//! quarantine it (`max_revisions`), and what changed since the last verdict.
//!
//! A verdict is `pass` or `fail`, given by one principal against one content hash and
//! one rubric hash. Passes count toward approval only while they are current: given in
//! the post's present review round (the store starts a new round whenever the content
//! changes or an approval is withdrawn), on the content hash the post has now, and after
//! the round's last fail. Distinct principals count once each, and only while they still
//! stand for someone: a pass by a token revoked since counts for nobody, and the local
//! CLI, which is whoever runs it, gives none of several required passes
//! ([`void_reason`]). A move of a draft's schedule starts a new round when the round
//! holds a pass (the stores' triggers), and the move is recorded on the edit's event
//! ([`schedule_move_note`]).
//!
//! Nothing here reads the rubric file or the ledger: callers pass the rubric's text and
//! the post's verdicts in.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::hash::{ContentHash, sha256_hex};
use crate::limits::MAX_REASON_CHARS;
use crate::post::{PostContent, PostId};

/// The most reasons one verdict may carry.
pub const MAX_REASONS: usize = 20;

/// The longest rubric file airlock reads, in bytes.
pub const MAX_RUBRIC_BYTES: usize = 64 * 1024;

/// The rubric a channel uses when its configuration names none.
pub const DEFAULT_RUBRIC: &str = "\
# Default rubric

Review the post as its readers will see it. Fail it, naming the item, when any item
below does not hold; pass it when all of them do.

- accuracy: Every claim is true and can be checked; nothing is promised that cannot be kept.
- tone: The voice is friendly and respectful; nothing is pushy, mocking or alarming.
- clarity: A reader understands it on first reading; links and media fit the text.
- safety: It reveals no private data, credentials or internal details.
";

/// Pass or fail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub enum VerdictKind {
    /// The content meets the rubric: counts toward approval (`approve`).
    Pass,
    /// It does not: the post returns to its writer with the reasons (`reject`).
    Fail,
}

impl VerdictKind {
    /// `pass` or `fail`, as stored and in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictKind::Pass => "pass",
            VerdictKind::Fail => "fail",
        }
    }
}

impl fmt::Display for VerdictKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for VerdictKind {
    type Err = crate::InvalidValue;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "pass" => Ok(VerdictKind::Pass),
            "fail" => Ok(VerdictKind::Fail),
            other => Err(crate::InvalidValue::new(
                "verdict",
                other,
                "a verdict is \"pass\" or \"fail\"",
            )),
        }
    }
}

/// A verdict as stored (the `verdicts` table).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Verdict {
    /// Its id, increasing over the ledger.
    pub id: i64,
    /// The post.
    pub post_id: PostId,
    /// `pass` or `fail`.
    pub verdict: VerdictKind,
    /// Short reasons, each naming the rubric item it applies to (`tone: too pushy`).
    pub reasons: Vec<String>,
    /// Who gave it.
    pub actor: String,
    /// The content hash it was given against.
    pub content_hash: ContentHash,
    /// SHA-256 of the rubric it was given under.
    pub rubric_hash: String,
    /// The post's review round when it was given (see the module docs).
    pub review_round: i64,
    /// The content it was given against, to show what changed since.
    #[serde(skip)]
    pub content: Option<PostContent>,
    /// When.
    pub at: DateTime<Utc>,
}

/// A verdict to record (the insert shape); the store adds the id and the review round.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewVerdict {
    /// `pass` or `fail`.
    pub verdict: VerdictKind,
    /// Checked reasons ([`Rubric::check_reasons`]).
    pub reasons: Vec<String>,
    /// The content hash it is given against (the post's current one).
    pub content_hash: ContentHash,
    /// SHA-256 of the rubric.
    pub rubric_hash: String,
    /// The content it is given against.
    pub content: PostContent,
}

/// One item of a rubric: `- tone: The voice is friendly.` has the id `tone`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RubricItem {
    /// What a reason names (`tone`).
    pub id: String,
    /// What it asks.
    pub text: String,
}

/// A rubric: the text a critic reviews against, its hash and its items.
///
/// The file is Markdown. Every list item that starts with an id and a colon (`- tone:
/// ...`, `* tone: ...`, `1. tone: ...`) is an item; the id is 1-32 letters, digits,
/// `-`, `_` or `.`. Everything else is guidance for the critic. A rubric without items
/// takes reasons of any shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Rubric {
    /// The text, as read.
    pub text: String,
    /// Lowercase hex SHA-256 of the text's bytes.
    pub hash: String,
    /// Its items, in order.
    pub items: Vec<RubricItem>,
}

/// What a reason starts with to name the channel's content policy rather than a rubric
/// item (`policy: lacks the #ad disclosure`): a critic may fail a post for the policy
/// whatever the rubric's items are.
pub const POLICY_REASON: &str = "policy";

/// A verdict's reasons that cannot be recorded, with what to write instead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReasonError {
    /// A fail without reasons.
    #[error(
        "a fail verdict needs at least one reason, each naming the rubric item it applies to (like \"{example}: ...\")"
    )]
    Missing {
        /// An item id to show in the example.
        example: String,
    },
    /// Too many reasons.
    #[error("a verdict has at most {MAX_REASONS} reasons; it has {0}")]
    TooMany(usize),
    /// A reason is empty or too long.
    #[error("each reason is 1-{MAX_REASON_CHARS} characters; reason {0} is not")]
    Length(usize),
    /// A reason that names no item of the rubric.
    #[error(
        "reason {index} ({reason:?}) names no rubric item: start it with one of {items} and a colon, like \"{example}: ...\", or with \"policy:\" for a problem with the channel's content policy"
    )]
    NoItem {
        /// 1-based position.
        index: usize,
        /// The start of the reason.
        reason: String,
        /// The rubric's item ids, comma-separated.
        items: String,
        /// An item id to show in the example.
        example: String,
    },
}

impl Rubric {
    /// Reads a rubric's text: its hash and items.
    pub fn parse(text: &str) -> Rubric {
        Rubric {
            text: text.to_owned(),
            hash: rubric_hash(text),
            items: text.lines().filter_map(item_of_line).collect(),
        }
    }

    /// The item with this id (compared case-insensitively).
    pub fn item(&self, id: &str) -> Option<&RubricItem> {
        self.items.iter().find(|i| i.id.eq_ignore_ascii_case(id))
    }

    /// Checks a verdict's reasons and returns them trimmed, each item id spelled as the
    /// rubric spells it. Reasons are required for a fail; when the rubric has items,
    /// `strict` requires every reason to start with one (`tone: ...`) or with
    /// [`POLICY_REASON`] (`policy: ...`). Reasons that do not name an item are kept as
    /// they are otherwise (the single free-text reason of `reject`).
    pub fn check_reasons(
        &self,
        verdict: VerdictKind,
        reasons: &[String],
        strict: bool,
    ) -> Result<Vec<String>, ReasonError> {
        let example = self
            .items
            .first()
            .map(|i| i.id.clone())
            .unwrap_or_else(|| "item".to_owned());
        let reasons: Vec<&str> = reasons
            .iter()
            .map(|r| r.trim())
            .filter(|r| !r.is_empty())
            .collect();
        if verdict == VerdictKind::Fail && reasons.is_empty() {
            return Err(ReasonError::Missing { example });
        }
        if reasons.len() > MAX_REASONS {
            return Err(ReasonError::TooMany(reasons.len()));
        }
        let mut checked = Vec::with_capacity(reasons.len());
        for (idx, reason) in reasons.iter().enumerate() {
            if reason.chars().count() > MAX_REASON_CHARS {
                return Err(ReasonError::Length(idx + 1));
            }
            let named = reason
                .split_once(':')
                .and_then(|(id, rest)| self.item(id.trim()).map(|item| (item, rest.trim())));
            let policy = reason
                .split_once(':')
                .filter(|(id, _)| id.trim().eq_ignore_ascii_case(POLICY_REASON))
                .map(|(_, rest)| rest.trim());
            match named {
                Some((item, rest)) => checked.push(format!("{}: {rest}", item.id)),
                None if policy.is_some() => {
                    checked.push(format!("{POLICY_REASON}: {}", policy.unwrap_or_default()));
                }
                None if strict && !self.items.is_empty() => {
                    return Err(ReasonError::NoItem {
                        index: idx + 1,
                        reason: reason.chars().take(40).collect(),
                        items: self
                            .items
                            .iter()
                            .map(|i| i.id.as_str())
                            .collect::<Vec<_>>()
                            .join(", "),
                        example,
                    });
                }
                None => checked.push((*reason).to_owned()),
            }
        }
        Ok(checked)
    }
}

/// The item a reason names, if it names one of `rubric`'s items (`tone: too pushy`).
pub fn reason_item<'a>(rubric: &'a Rubric, reason: &str) -> Option<&'a RubricItem> {
    reason
        .split_once(':')
        .and_then(|(id, _)| rubric.item(id.trim()))
}

/// Lowercase hex SHA-256 of a rubric's text: what every verdict records.
pub fn rubric_hash(text: &str) -> String {
    sha256_hex(text.as_bytes())
}

fn item_of_line(line: &str) -> Option<RubricItem> {
    let line = line.trim_start();
    let rest = if let Some(rest) = line.strip_prefix("- ").or_else(|| line.strip_prefix("* ")) {
        rest
    } else {
        let digits = line.bytes().take_while(u8::is_ascii_digit).count();
        let after = &line[digits..];
        match after
            .strip_prefix(". ")
            .or_else(|| after.strip_prefix(") "))
        {
            Some(rest) if digits > 0 => rest,
            _ => return None,
        }
    };
    let (id, text) = rest.split_once(':')?;
    let id = id.trim().trim_matches('*').trim_matches('`');
    let valid = (1..=32).contains(&id.len())
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    valid.then(|| RubricItem {
        id: id.to_owned(),
        text: text.trim().to_owned(),
    })
}

/// A channel's review rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReviewRules {
    /// Distinct critics that must pass the same content before it is approved (at least 1).
    pub approvals_required: u32,
    /// Fail verdicts after which the post is quarantined (at least 1).
    pub max_revisions: u32,
}

impl Default for ReviewRules {
    /// One approval; quarantine after two fails.
    fn default() -> Self {
        ReviewRules {
            approvals_required: 1,
            max_revisions: 2,
        }
    }
}

/// The principals whose passes are current: given in `round`, on `hash`, after the
/// round's last fail; each once, in the order they passed.
pub fn current_passes(verdicts: &[Verdict], round: i64, hash: &ContentHash) -> Vec<String> {
    let mut in_round: Vec<&Verdict> = verdicts
        .iter()
        .filter(|v| v.review_round == round)
        .collect();
    in_round.sort_by_key(|v| v.id);
    let since_fail = match in_round
        .iter()
        .rposition(|v| v.verdict == VerdictKind::Fail)
    {
        Some(idx) => &in_round[idx + 1..],
        None => &in_round[..],
    };
    let mut passers: Vec<String> = Vec::new();
    for verdict in since_fail {
        if verdict.verdict == VerdictKind::Pass
            && &verdict.content_hash == hash
            && !passers.contains(&verdict.actor)
        {
            passers.push(verdict.actor.clone());
        }
    }
    passers
}

/// The actor the local command line is recorded as (`Actor::Cli`).
const CLI_ACTOR: &str = "cli";

/// A principal whose passes stand for nobody: a token revoked since it passed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Revoked {
    /// The actor its verdicts are recorded under (`token:<name>`).
    pub actor: String,
    /// When it was revoked.
    pub at: DateTime<Utc>,
}

/// Why a pass by `actor` counts toward approval for nobody, or `None` when it may count:
/// `actor` is a token revoked since (`revoked`), or it is the local CLI on a channel
/// that requires several passes (the CLI is whoever runs it, so one person at the CLI
/// and with a token would count twice).
pub fn void_reason(actor: &str, revoked: &[Revoked], rules: ReviewRules) -> Option<String> {
    if let Some(token) = revoked.iter().find(|r| r.actor == actor) {
        return Some(format!(
            "{actor} was revoked at {}: its passes count for nobody",
            crate::time::format_utc(token.at)
        ));
    }
    (actor == CLI_ACTOR && rules.approvals_required > 1).then(|| {
        format!(
            "the CLI is whoever runs it: it gives none of several required passes (approvals_required = {})",
            rules.approvals_required
        )
    })
}

/// The verdicts with every pass that counts for nobody ([`void_reason`]) left out: what
/// [`decide`] and [`current_passes`] are given. Fails stay: a fail by a token revoked
/// since still voids the passes before it.
pub fn standing(verdicts: &[Verdict], revoked: &[Revoked], rules: ReviewRules) -> Vec<Verdict> {
    verdicts
        .iter()
        .filter(|v| {
            v.verdict == VerdictKind::Fail || void_reason(&v.actor, revoked, rules).is_none()
        })
        .cloned()
        .collect()
}

/// A pass that would be current but counts for nobody.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct VoidPass {
    /// The verdict's id.
    pub verdict: i64,
    /// Who gave it.
    pub actor: String,
    /// Why it does not count.
    pub reason: String,
}

/// The passes that would be current ([`current_passes`]) but count for nobody
/// ([`void_reason`]), each principal once, in the order they passed.
pub fn void_passes(
    verdicts: &[Verdict],
    round: i64,
    hash: &ContentHash,
    revoked: &[Revoked],
    rules: ReviewRules,
) -> Vec<VoidPass> {
    let current = current_passes(verdicts, round, hash);
    let mut void: Vec<VoidPass> = Vec::new();
    let mut in_round: Vec<&Verdict> = verdicts
        .iter()
        .filter(|v| v.review_round == round && v.verdict == VerdictKind::Pass)
        .collect();
    in_round.sort_by_key(|v| v.id);
    for actor in current {
        let Some(reason) = void_reason(&actor, revoked, rules) else {
            continue;
        };
        let verdict = in_round
            .iter()
            .rev()
            .find(|v| v.actor == actor)
            .map_or(0, |v| v.id);
        void.push(VoidPass {
            verdict,
            actor,
            reason,
        });
    }
    void
}

/// How an edit's event names a move of the schedule (`fields` of the edit):
/// `scheduled_at from <old> to <new>`, both UTC in RFC 3339. [`schedule_move_in`] reads
/// it back.
pub fn schedule_move_note(from: DateTime<Utc>, to: DateTime<Utc>) -> String {
    use chrono::SecondsFormat::AutoSi;
    format!(
        "scheduled_at from {} to {}",
        from.to_rfc3339_opts(AutoSi, true),
        to.to_rfc3339_opts(AutoSi, true)
    )
}

/// The move of the schedule an event's note names ([`schedule_move_note`]): from, to.
pub fn schedule_move_in(note: &str) -> Option<(DateTime<Utc>, DateTime<Utc>)> {
    let rest = &note[note.find("scheduled_at from ")? + "scheduled_at from ".len()..];
    let (from, rest) = rest.split_once(" to ")?;
    let end = rest
        .find(|c: char| c == ',' || c == ')' || c.is_whitespace())
        .unwrap_or(rest.len());
    let time = |t: &str| {
        DateTime::parse_from_rfc3339(t)
            .ok()
            .map(|t| t.with_timezone(&Utc))
    };
    Some((time(from)?, time(&rest[..end])?))
}

/// What a new verdict does to its post.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The pass completes the approvals: `draft -> approved`.
    Approve {
        /// Every critic whose pass counts, this one last.
        passed_by: Vec<String>,
    },
    /// The pass is recorded; more critics must pass the same content.
    AwaitMore {
        /// Every critic whose pass counts, this one last.
        passed_by: Vec<String>,
        /// How many more are needed.
        needed: u32,
    },
    /// The fail returns the post to its writer.
    Revise {
        /// Counted fails since the last release, this one included when `counted`.
        revisions: i64,
        /// Whether this fail counts a revision: only the first fail on a content in a
        /// review round does.
        counted: bool,
    },
    /// The fail reaches `max_revisions`: the post is quarantined.
    Quarantine {
        /// Counted fails since the last release, this one included when `counted`.
        revisions: i64,
        /// Whether this fail counts a revision (see [`Decision::Revise`]).
        counted: bool,
    },
    /// The same principal already failed this content in this round, and nobody passed
    /// it since: a retry. Nothing is recorded or changed; the answer is that verdict's.
    Repeat {
        /// The earlier fail's id.
        verdict: i64,
    },
}

/// Why a verdict cannot count.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecisionError {
    /// The local CLI on a channel that requires several passes ([`refuse_pass`]).
    #[error(
        "the CLI is whoever runs it, so it gives none of the {required} passes this channel requires (approvals_required = {required}): have each critic pass with a token of their own (`airlock token create --name NAME --role critic`), or set [cli] require_token = true so the CLI acts as your operator token; you may still fail it"
    )]
    NoIdentity {
        /// The channel's `approvals_required`.
        required: u32,
    },
    /// The same principal already passed this content in this round.
    #[error(
        "{actor} already passed this content; it needs {needed} more pass(es) from other critics (approvals_required = {required})"
    )]
    AlreadyPassed {
        /// Who.
        actor: String,
        /// How many more distinct critics are needed.
        needed: u32,
        /// The channel's `approvals_required`.
        required: u32,
    },
}

/// Why `actor` may not give a pass at all under `rules`, whatever the post: the local
/// CLI on a channel that requires several passes ([`void_reason`]).
pub fn refuse_pass(actor: &str, rules: ReviewRules) -> Option<DecisionError> {
    (actor == CLI_ACTOR && rules.approvals_required > 1).then_some(DecisionError::NoIdentity {
        required: rules.approvals_required,
    })
}

/// Decides what a new verdict by `actor` does, given the post's earlier verdicts, its
/// review round, its content hash and its counted fails since the last release.
///
/// `earlier` holds the verdicts that still stand ([`standing`]). A pass is refused to a
/// principal [`refuse_pass`] names. A fail counts a revision only when no earlier fail
/// was given on the same content without a revision since (one revise cycle per
/// content); a fail by `actor` that repeats its own earlier fail on that content, with no
/// pass since, is [`Decision::Repeat`].
pub fn decide(
    verdict: VerdictKind,
    actor: &str,
    earlier: &[Verdict],
    round: i64,
    hash: &ContentHash,
    revisions: i64,
    rules: ReviewRules,
) -> Result<Decision, DecisionError> {
    match verdict {
        VerdictKind::Pass => {
            if let Some(refused) = refuse_pass(actor, rules) {
                return Err(refused);
            }
            let mut passed_by = current_passes(earlier, round, hash);
            let required = rules.approvals_required.max(1);
            if passed_by.iter().any(|a| a == actor) {
                return Err(DecisionError::AlreadyPassed {
                    actor: actor.to_owned(),
                    needed: required.saturating_sub(passed_by.len() as u32).max(1),
                    required,
                });
            }
            passed_by.push(actor.to_owned());
            let have = passed_by.len() as u32;
            if have >= required {
                Ok(Decision::Approve { passed_by })
            } else {
                Ok(Decision::AwaitMore {
                    passed_by,
                    needed: required - have,
                })
            }
        }
        VerdictKind::Fail => {
            if let Some(verdict) = repeated_fail(earlier, actor, round, hash) {
                return Ok(Decision::Repeat { verdict });
            }
            // One revision per content per review round: a second critic failing the
            // same content is recorded, but the writer has not had a revise cycle yet.
            let counted = !earlier
                .iter()
                .any(|v| v.verdict == VerdictKind::Fail && same_content(v, round, hash));
            let revisions = revisions + i64::from(counted);
            if revisions >= i64::from(rules.max_revisions.max(1)) {
                Ok(Decision::Quarantine { revisions, counted })
            } else {
                Ok(Decision::Revise { revisions, counted })
            }
        }
    }
}

/// Whether `verdict` was given on the content a post has now (`hash`, in review `round`)
/// with no revision since: on `hash` in this round, or in the round before (a fail that
/// withdrew an approval is recorded in the round it ended; an edit in between would have
/// changed the hash, and coming back to it takes two rounds).
fn same_content(verdict: &Verdict, round: i64, hash: &ContentHash) -> bool {
    &verdict.content_hash == hash
        && (verdict.review_round == round || verdict.review_round + 1 == round)
}

/// The earlier fail by `actor` on the content a post has now (see [`decide`]) that a
/// new fail would only repeat: the latest such fail, when nobody passed after it.
pub fn repeated_fail(
    earlier: &[Verdict],
    actor: &str,
    round: i64,
    hash: &ContentHash,
) -> Option<i64> {
    let mut in_round: Vec<&Verdict> = earlier
        .iter()
        .filter(|v| same_content(v, round, hash))
        .collect();
    in_round.sort_by_key(|v| v.id);
    let last_fail = in_round
        .iter()
        .rposition(|v| v.verdict == VerdictKind::Fail && v.actor == actor)?;
    let passed_since = in_round[last_fail + 1..]
        .iter()
        .any(|v| v.verdict == VerdictKind::Pass);
    (!passed_since).then(|| in_round[last_fail].id)
}

/// The pass by `actor` that counts for the content a post has now (`hash`, in review
/// `round`): a new pass would only repeat it (a retry whose answer was lost). Its id,
/// the latest such pass.
pub fn repeated_pass(
    earlier: &[Verdict],
    actor: &str,
    round: i64,
    hash: &ContentHash,
) -> Option<i64> {
    if !current_passes(earlier, round, hash)
        .iter()
        .any(|a| a == actor)
    {
        return None;
    }
    earlier
        .iter()
        .filter(|v| {
            v.verdict == VerdictKind::Pass
                && v.actor == actor
                && v.review_round == round
                && &v.content_hash == hash
        })
        .map(|v| v.id)
        .max()
}

/// What changed between the content a verdict was given against and the content now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ContentChange {
    /// The fields that differ (`text`, `title`, `media`, `link`, `source`).
    pub fields: Vec<String>,
    /// The text's lines that differ, as `- old` and `+ new` (between the unchanged
    /// lines at its start and end); empty when the text is the same.
    pub text_diff: Vec<String>,
    /// The earlier title, when it changed.
    pub previous_title: Option<String>,
    /// The earlier link, when it changed.
    pub previous_link: Option<String>,
}

/// The most changed lines [`changes`] lists.
pub const MAX_DIFF_LINES: usize = 200;

/// What changed from `before` to `after`.
pub fn changes(before: &PostContent, after: &PostContent) -> ContentChange {
    let mut fields = Vec::new();
    if before.title != after.title {
        fields.push("title".to_owned());
    }
    if before.text != after.text {
        fields.push("text".to_owned());
    }
    if before.media != after.media {
        fields.push("media".to_owned());
    }
    if before.link != after.link {
        fields.push("link".to_owned());
    }
    if before.source != after.source {
        fields.push("source".to_owned());
    }
    if before.more != after.more {
        fields.push("parts".to_owned());
    }
    if before.first_comment != after.first_comment {
        fields.push("first_comment".to_owned());
    }
    ContentChange {
        fields,
        text_diff: line_diff(&all_text(before), &all_text(after)),
        previous_title: (before.title != after.title)
            .then(|| before.title.clone())
            .flatten(),
        previous_link: (before.link != after.link)
            .then(|| before.link.clone())
            .flatten(),
    }
}

/// Every part's text and the first comment, as one Markdown thread file writes them
/// ([`crate::thread`]): a single post's is its text.
fn all_text(content: &PostContent) -> String {
    let mut texts: Vec<&str> = std::iter::once(content.text.as_str())
        .chain(content.more.iter().map(|p| p.text.as_str()))
        .collect();
    if let Some(comment) = &content.first_comment {
        texts.push(comment);
    }
    texts.join(&format!("\n{}\n", crate::thread::PART_SEPARATOR))
}

/// The lines between the common first and last lines: removed ones as `- line`, added
/// ones as `+ line`; at most [`MAX_DIFF_LINES`], then a line saying how many more.
pub fn line_diff(before: &str, after: &str) -> Vec<String> {
    if before == after {
        return Vec::new();
    }
    let old: Vec<&str> = before.lines().collect();
    let new: Vec<&str> = after.lines().collect();
    let prefix = old.iter().zip(&new).take_while(|(a, b)| a == b).count();
    let suffix = old[prefix..]
        .iter()
        .rev()
        .zip(new[prefix..].iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    let removed = &old[prefix..old.len() - suffix];
    let added = &new[prefix..new.len() - suffix];
    let mut diff: Vec<String> = removed
        .iter()
        .map(|l| format!("- {l}"))
        .chain(added.iter().map(|l| format!("+ {l}")))
        .collect();
    if diff.is_empty() {
        // Only line ends differ (a trailing newline).
        diff.push("~ line ends changed".to_owned());
    }
    if diff.len() > MAX_DIFF_LINES {
        let more = diff.len() - MAX_DIFF_LINES;
        diff.truncate(MAX_DIFF_LINES);
        diff.push(format!("… {more} more changed lines"));
    }
    diff
}

/// The version of [`text_key`]. Stores record the version their `posts.text_key` values
/// were computed with, and a store opened by a role that may write recomputes them when
/// it is below this one (migration `0011_text_key_version`). Raise it with any change
/// that may change a key: to [`normalise_text`], or to the Unicode data it reads (an
/// update of `unicode-security`, `unicode-script` or `unicode-normalization`, or of the
/// toolchain's `char` tables); `the_duplicate_key_is_pinned_to_its_version` notices.
/// Version 1 was NFKC, lowercase, ignorables removed and whitespace collapsed.
pub const TEXT_KEY_VERSION: i64 = 2;

/// Characters that show nothing (Unicode's Default_Ignorable_Code_Point, and the format
/// characters among them): removed before duplicates are compared.
const IGNORABLE: &[(char, char)] = &[
    ('\u{00AD}', '\u{00AD}'),
    ('\u{034F}', '\u{034F}'),
    ('\u{061C}', '\u{061C}'),
    ('\u{115F}', '\u{1160}'),
    ('\u{17B4}', '\u{17B5}'),
    ('\u{180B}', '\u{180F}'),
    ('\u{200B}', '\u{200F}'),
    ('\u{202A}', '\u{202E}'),
    ('\u{2060}', '\u{206F}'),
    ('\u{3164}', '\u{3164}'),
    ('\u{FE00}', '\u{FE0F}'),
    ('\u{FEFF}', '\u{FEFF}'),
    ('\u{FFA0}', '\u{FFA0}'),
    ('\u{FFF0}', '\u{FFF8}'),
    ('\u{1BCA0}', '\u{1BCA3}'),
    ('\u{1D173}', '\u{1D17A}'),
    ('\u{E0000}', '\u{E0FFF}'),
];

/// Format characters outside [`IGNORABLE`] that show nothing in running text (Arabic
/// and Syriac number and end-of-ayah signs, interlinear annotation, Egyptian and Kaithi
/// format controls): removed too, as are control characters.
const INVISIBLE_FORMAT: &[(char, char)] = &[
    ('\u{0600}', '\u{0605}'),
    ('\u{06DD}', '\u{06DD}'),
    ('\u{070F}', '\u{070F}'),
    ('\u{0890}', '\u{0891}'),
    ('\u{08E2}', '\u{08E2}'),
    ('\u{FFF9}', '\u{FFFB}'),
    ('\u{110BD}', '\u{110BD}'),
    ('\u{110CD}', '\u{110CD}'),
    ('\u{13430}', '\u{1343F}'),
];

/// Whether `c` shows nothing: a default-ignorable code point, a format character that
/// is drawn as nothing, or a control character that is not whitespace.
pub fn is_ignorable(c: char) -> bool {
    (c.is_control() && !c.is_whitespace())
        || IGNORABLE
            .iter()
            .chain(INVISIBLE_FORMAT)
            .any(|&(lo, hi)| (lo..=hi).contains(&c))
}

/// Small capitals, which have no case and no skeleton of their own, and the Latin
/// letters they read as.
const SMALL_CAPITALS: &[(char, char)] = &[
    ('\u{1D00}', 'a'),
    ('\u{0299}', 'b'),
    ('\u{1D04}', 'c'),
    ('\u{1D05}', 'd'),
    ('\u{1D07}', 'e'),
    ('\u{A730}', 'f'),
    ('\u{0262}', 'g'),
    ('\u{029C}', 'h'),
    ('\u{026A}', 'i'),
    ('\u{1D0A}', 'j'),
    ('\u{1D0B}', 'k'),
    ('\u{029F}', 'l'),
    ('\u{1D0D}', 'm'),
    ('\u{0274}', 'n'),
    ('\u{1D0F}', 'o'),
    ('\u{1D18}', 'p'),
    ('\u{A7AF}', 'q'),
    ('\u{0280}', 'r'),
    ('\u{A731}', 's'),
    ('\u{1D1B}', 't'),
    ('\u{1D1C}', 'u'),
    ('\u{1D20}', 'v'),
    ('\u{1D21}', 'w'),
    ('\u{028F}', 'y'),
    ('\u{1D22}', 'z'),
];

/// Characters drawn as an empty space of some width that are not whitespace: duplicates
/// read each as a space. None is whitespace, and only the Hangul fillers are
/// default-ignorable (so [`is_ignorable`] would remove them), but fonts and shapers
/// (Uniscribe, HarfBuzz) draw the fillers as spacing blanks, so they read as a space
/// too, not as nothing. U+3164 and U+FFA0 become U+1160 under NFKC; they are listed for
/// anyone reading the list.
pub const BLANK_LOOKING: &[char] = &[
    '\u{115F}',  // HANGUL CHOSEONG FILLER
    '\u{1160}',  // HANGUL JUNGSEONG FILLER
    '\u{2800}',  // BRAILLE PATTERN BLANK (a braille cell without dots)
    '\u{3164}',  // HANGUL FILLER
    '\u{FFA0}',  // HALFWIDTH HANGUL FILLER
    '\u{13441}', // EGYPTIAN HIEROGLYPH FULL BLANK (an empty quadrat)
    '\u{13442}', // EGYPTIAN HIEROGLYPH HALF BLANK
    '\u{1D159}', // MUSICAL SYMBOL NULL NOTEHEAD (a notehead drawn as nothing)
];

/// Whether `c` is drawn as blank space without being whitespace ([`BLANK_LOOKING`]).
pub fn is_blank_looking(c: char) -> bool {
    BLANK_LOOKING.contains(&c)
}

/// A text as duplicates are compared: as people read it. Two drafts whose texts
/// normalise alike are the same post to a reader.
///
/// 1. NFKC: compatibility forms (fullwidth and mathematical letters, ligatures,
///    superscripts) read as their plain form.
/// 2. Whitespace and blank-looking characters ([`BLANK_LOOKING`]) are a space; every
///    run of spaces is one, and the text is trimmed. Characters that show nothing
///    ([`is_ignorable`]) are removed.
/// 3. Letters are decomposed (NFD) and their combining marks dropped (`é`, `ė` and `e`
///    are one letter), except a mark of the letter's own script (a Devanagari vowel
///    sign on a Devanagari letter, a Hebrew point), which is part of the letter, on a
///    letter that does not read as a Latin one (step 4: a Cyrillic `о` keeps no titlo). Marks
///    of script Common or Inherited (accents, dots, overlays, kana voicing marks) are
///    always dropped, as is a mark of another script than its letter's, and a mark
///    standing on anything but a letter (composed symbols such as `≠` stay whole).
/// 4. Every remaining character reads as its UTS #39 skeleton (`unicode-security`'s
///    confusable prototypes: Cyrillic `а`, Greek `ο` read as Latin `a`, `o`) in small
///    letters. A capital that reads as a Latin capital (Cyrillic `Н`, Greek `Η`) reads
///    as that letter, so that both capitals and small letters in disguise are found;
///    `I`-shaped capitals (Latin `I`, Greek `Ι`, Cyrillic `І`) read as `i`, so that a
///    text in capitals keeps the key of the same text in small letters. Small capitals
///    (`ᴘ`, `ꜱ`) read as their letter.
///
/// The skeleton also reads some characters alike that an attentive reader tells apart:
/// `0` as `o`, `1`, `l` and `|` alike, `rn` as `m`. Such texts are duplicates too (an
/// operator drafts one on purpose with `allow_duplicate`). Texts that differ in a letter,
/// a digit that looks like no letter, punctuation or spacing keep different keys. A few
/// Greek capitals read as another Latin letter than their small letter (`Η` as `h`, `η`
/// as `n`): a Greek text with them in capitals and in small letters has two keys.
pub fn normalise_text(text: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    use unicode_normalization::char::is_combining_mark;
    use unicode_script::{Script, UnicodeScript};

    let mut out = String::with_capacity(text.len());
    // The script of the letter that combining marks stand on (Common: no letter).
    let mut base = Script::Common;
    for c in text.nfkc() {
        if is_combining_mark(c) {
            push_mark(&mut out, c, base);
        } else if c.is_whitespace() || is_blank_looking(c) {
            out.push(' ');
            base = Script::Common;
        } else if c.is_alphabetic() {
            for d in std::iter::once(c).nfd() {
                if is_combining_mark(d) {
                    push_mark(&mut out, d, base);
                } else {
                    let reading = reads_as(d, true);
                    // A letter that reads as a Latin one keeps no mark: Cyrillic `о` with
                    // a titlo is `o` in disguise, as `ȯ` is.
                    base = if reading.is_ascii() {
                        Script::Common
                    } else {
                        d.script()
                    };
                    out.push_str(&reading);
                }
            }
        } else if !is_ignorable(c) {
            base = Script::Common;
            out.push_str(&reads_as(c, false));
        }
    }
    out.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Keeps a combining mark only when it is of the script of the letter it stands on
/// (`base`), and that script is a particular one (step 3 of [`normalise_text`]).
fn push_mark(out: &mut String, mark: char, base: unicode_script::Script) {
    use unicode_script::{Script, UnicodeScript};
    let script = mark.script();
    if script == base && !matches!(script, Script::Common | Script::Inherited) {
        out.push(mark);
    }
}

/// How one character reads (step 4 of [`normalise_text`]): its skeleton in small
/// letters. For a `letter`, the combining marks of the skeleton's prototypes are dropped
/// as the letter's own would be (Greek `η` reads as `n̩`, that is `n`).
fn reads_as(c: char, letter: bool) -> String {
    use std::sync::OnceLock;
    // Nearly every character of most posts is ASCII: their readings, computed once.
    static ASCII: OnceLock<Vec<[String; 2]>> = OnceLock::new();
    if c.is_ascii() {
        let table = ASCII.get_or_init(|| {
            (0..128u8)
                .map(|b| [read(char::from(b), false), read(char::from(b), true)])
                .collect()
        });
        return table[usize::from(c as u8)][usize::from(letter)].clone();
    }
    read(c, letter)
}

fn read(c: char, letter: bool) -> String {
    if let Some(&(_, latin)) = SMALL_CAPITALS.iter().find(|&&(small, _)| small == c) {
        return skeleton_lower(&latin.to_string(), letter);
    }
    let small = skeleton_lower(&c.to_lowercase().collect::<String>(), letter);
    let capital = skeleton_lower(&c.to_uppercase().collect::<String>(), letter);
    let chosen = if c.is_uppercase() && capital.is_ascii() && capital != "l" {
        capital
    } else if small.is_ascii() || !capital.is_ascii() {
        small
    } else {
        // A small letter whose capital reads as a Latin capital (Cyrillic `н`, as `Н`).
        capital
    };
    // A Latin reading in small letters may read as others again (`M`, `m`, `rn`).
    if chosen.is_ascii() {
        skeleton_lower(&chosen, letter)
    } else {
        chosen
    }
}

/// The UTS #39 skeleton of `s`, in small letters; without the combining marks of script
/// Common or Inherited when it stands for a `letter`.
fn skeleton_lower(s: &str, letter: bool) -> String {
    use unicode_normalization::char::is_combining_mark;
    use unicode_script::{Script, UnicodeScript};
    unicode_security::skeleton(s)
        .filter(|&m| {
            !(letter
                && is_combining_mark(m)
                && matches!(m.script(), Script::Common | Script::Inherited))
        })
        .flat_map(char::to_lowercase)
        .collect()
}

/// The key duplicates are found by: lowercase hex SHA-256 of [`normalise_text`]
/// (version [`TEXT_KEY_VERSION`]).
pub fn text_key(text: &str) -> String {
    sha256_hex(normalise_text(text).as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::post::{ChannelName, Media};

    fn hash(n: u8) -> ContentHash {
        ContentHash::parse(&format!("{n:02x}").repeat(32)).unwrap()
    }

    fn verdict(id: i64, kind: VerdictKind, actor: &str, round: i64, h: u8) -> Verdict {
        Verdict {
            id,
            post_id: PostId(1),
            verdict: kind,
            reasons: vec![],
            actor: actor.into(),
            content_hash: hash(h),
            rubric_hash: "r".into(),
            review_round: round,
            content: None,
            at: DateTime::UNIX_EPOCH,
        }
    }

    const RUBRIC: &str = "# Threads rubric\n\nSome guidance.\n\n- tone: Friendly.\n* claims: Only true claims.\n3. cats: Respect the cats.\n- Not an item because of spaces: no\n";

    #[test]
    fn rubric_items_are_list_items_with_an_id() {
        let rubric = Rubric::parse(RUBRIC);
        let ids: Vec<&str> = rubric.items.iter().map(|i| i.id.as_str()).collect();
        assert_eq!(ids, ["tone", "claims", "cats"]);
        assert_eq!(rubric.items[1].text, "Only true claims.");
        assert_eq!(rubric.hash, sha256_hex(RUBRIC.as_bytes()));
        let default = Rubric::parse(DEFAULT_RUBRIC);
        assert_eq!(default.items.len(), 4);
    }

    #[test]
    fn a_changed_rubric_has_another_hash() {
        let a = Rubric::parse(RUBRIC);
        let b = Rubric::parse(&format!("{RUBRIC}- length: Short.\n"));
        assert_ne!(a.hash, b.hash);
        assert_eq!(a.hash, rubric_hash(RUBRIC));
    }

    #[test]
    fn fail_reasons_must_name_an_item_when_strict() {
        let rubric = Rubric::parse(RUBRIC);
        let ok = rubric
            .check_reasons(
                VerdictKind::Fail,
                &["TONE:  too pushy ".into(), "cats: rushes them".into()],
                true,
            )
            .unwrap();
        assert_eq!(ok, ["tone: too pushy", "cats: rushes them"]);
        let err = rubric
            .check_reasons(VerdictKind::Fail, &["too pushy".into()], true)
            .unwrap_err();
        assert!(err.to_string().contains("tone, claims, cats"), "{err}");
        assert!(matches!(
            rubric.check_reasons(VerdictKind::Fail, &[], true),
            Err(ReasonError::Missing { .. })
        ));
        assert!(matches!(
            rubric.check_reasons(VerdictKind::Fail, &["  ".into()], false),
            Err(ReasonError::Missing { .. })
        ));
        // A pass needs no reasons; a free reason is kept when not strict.
        assert_eq!(
            rubric.check_reasons(VerdictKind::Pass, &[], true).unwrap(),
            Vec::<String>::new()
        );
        assert_eq!(
            rubric
                .check_reasons(VerdictKind::Fail, &["too salesy".into()], false)
                .unwrap(),
            ["too salesy"]
        );
        let many: Vec<String> = (0..=MAX_REASONS).map(|i| format!("tone: {i}")).collect();
        assert_eq!(
            rubric.check_reasons(VerdictKind::Fail, &many, true),
            Err(ReasonError::TooMany(MAX_REASONS + 1))
        );
        let long = format!("tone: {}", "x".repeat(MAX_REASON_CHARS));
        assert_eq!(
            rubric.check_reasons(VerdictKind::Fail, &[long], true),
            Err(ReasonError::Length(1))
        );
        // The content policy is named as `policy`, whatever the rubric's items.
        assert_eq!(
            rubric
                .check_reasons(
                    VerdictKind::Fail,
                    &["Policy : lacks the #ad disclosure".into()],
                    true
                )
                .unwrap(),
            ["policy: lacks the #ad disclosure"]
        );
        assert!(err.to_string().contains("\"policy:\""), "{err}");
        // A rubric without items takes any reason.
        let free = Rubric::parse("Be kind.");
        assert_eq!(
            free.check_reasons(VerdictKind::Fail, &["rude".into()], true)
                .unwrap(),
            ["rude"]
        );
    }

    #[test]
    fn passes_count_once_per_critic_in_the_round_on_the_hash() {
        use VerdictKind::*;
        let verdicts = [
            verdict(1, Pass, "token:a", 0, 1),
            verdict(2, Pass, "token:a", 0, 1),
            verdict(3, Pass, "token:b", 0, 1),
            verdict(4, Pass, "token:c", 0, 2),
            verdict(5, Pass, "token:d", 1, 1),
        ];
        assert_eq!(
            current_passes(&verdicts, 0, &hash(1)),
            ["token:a", "token:b"]
        );
        assert_eq!(current_passes(&verdicts, 1, &hash(1)), ["token:d"]);
        assert!(current_passes(&verdicts, 2, &hash(1)).is_empty());
    }

    #[test]
    fn a_pass_repeats_the_one_that_counts_for_the_content_now() {
        use VerdictKind::*;
        let verdicts = [
            verdict(1, Pass, "token:a", 0, 1),
            verdict(2, Pass, "token:a", 0, 1),
            verdict(3, Pass, "token:b", 0, 1),
            verdict(4, Fail, "token:c", 0, 1),
            verdict(5, Pass, "token:b", 0, 1),
        ];
        // a's passes were voided by the fail; b passed again after it.
        assert_eq!(repeated_pass(&verdicts, "token:a", 0, &hash(1)), None);
        assert_eq!(repeated_pass(&verdicts, "token:b", 0, &hash(1)), Some(5));
        assert_eq!(
            repeated_pass(&verdicts[..3], "token:a", 0, &hash(1)),
            Some(2)
        );
        // Another round or another content is not a repeat.
        assert_eq!(repeated_pass(&verdicts, "token:b", 1, &hash(1)), None);
        assert_eq!(repeated_pass(&verdicts, "token:b", 0, &hash(2)), None);
    }

    #[test]
    fn a_fail_voids_the_passes_before_it() {
        use VerdictKind::*;
        let verdicts = [
            verdict(1, Pass, "token:a", 0, 1),
            verdict(2, Fail, "token:b", 0, 1),
            verdict(3, Pass, "token:c", 0, 1),
        ];
        assert_eq!(current_passes(&verdicts, 0, &hash(1)), ["token:c"]);
    }

    #[test]
    fn two_required_approvals_need_two_distinct_critics() {
        use VerdictKind::*;
        let rules = ReviewRules {
            approvals_required: 2,
            max_revisions: 2,
        };
        let first = decide(Pass, "token:a", &[], 0, &hash(1), 0, rules).unwrap();
        assert_eq!(
            first,
            Decision::AwaitMore {
                passed_by: vec!["token:a".into()],
                needed: 1
            }
        );
        let earlier = [verdict(1, Pass, "token:a", 0, 1)];
        let again = decide(Pass, "token:a", &earlier, 0, &hash(1), 0, rules).unwrap_err();
        assert_eq!(
            again,
            DecisionError::AlreadyPassed {
                actor: "token:a".into(),
                needed: 1,
                required: 2
            }
        );
        assert_eq!(
            decide(Pass, "token:b", &earlier, 0, &hash(1), 0, rules).unwrap(),
            Decision::Approve {
                passed_by: vec!["token:a".into(), "token:b".into()]
            }
        );
        // After an edit (a new round, a new hash) the first pass no longer counts.
        assert!(matches!(
            decide(Pass, "token:b", &earlier, 1, &hash(2), 0, rules).unwrap(),
            Decision::AwaitMore { needed: 1, .. }
        ));
        // One approval is the default.
        assert!(matches!(
            decide(Pass, "token:a", &[], 0, &hash(1), 0, ReviewRules::default()).unwrap(),
            Decision::Approve { .. }
        ));
    }

    #[test]
    fn a_pass_by_a_token_revoked_since_counts_for_nobody() {
        use VerdictKind::*;
        let rules = ReviewRules {
            approvals_required: 2,
            max_revisions: 2,
        };
        let revoked = [Revoked {
            actor: "token:a".into(),
            at: DateTime::UNIX_EPOCH,
        }];
        let all = [
            verdict(1, Pass, "token:a", 0, 1),
            verdict(2, Pass, "token:b", 0, 1),
        ];
        let standing = standing(&all, &revoked, rules);
        assert_eq!(current_passes(&standing, 0, &hash(1)), ["token:b"]);
        // The next pass is the second that stands, not the third that was given.
        assert!(matches!(
            decide(Pass, "token:c", &standing, 0, &hash(1), 0, rules).unwrap(),
            Decision::Approve { passed_by } if passed_by == ["token:b", "token:c"]
        ));
        let void = void_passes(&all, 0, &hash(1), &revoked, rules);
        assert_eq!(void.len(), 1);
        assert_eq!((void[0].verdict, void[0].actor.as_str()), (1, "token:a"));
        assert!(void[0].reason.contains("revoked"), "{}", void[0].reason);
        // A fail by a token revoked since still voids the passes before it.
        let failed = [
            verdict(1, Pass, "token:b", 0, 1),
            verdict(2, Fail, "token:a", 0, 1),
        ];
        assert!(current_passes(&super::standing(&failed, &revoked, rules), 0, &hash(1)).is_empty());
    }

    #[test]
    fn the_cli_gives_none_of_several_required_passes() {
        use VerdictKind::*;
        assert_eq!(crate::Actor::Cli.to_string(), CLI_ACTOR);
        let two = ReviewRules {
            approvals_required: 2,
            max_revisions: 2,
        };
        let refused = decide(Pass, "cli", &[], 0, &hash(1), 0, two).unwrap_err();
        assert_eq!(refused, DecisionError::NoIdentity { required: 2 });
        assert!(refused.to_string().contains("token create"), "{refused}");
        // A fail stays open to it, and one required pass is its to give.
        assert!(decide(Fail, "cli", &[], 0, &hash(1), 0, two).is_ok());
        assert!(matches!(
            decide(Pass, "cli", &[], 0, &hash(1), 0, ReviewRules::default()).unwrap(),
            Decision::Approve { .. }
        ));
        // A pass it gave before counts for nobody where several are required.
        let earlier = [
            verdict(1, Pass, "cli", 0, 1),
            verdict(2, Pass, "token:a", 0, 1),
        ];
        assert_eq!(
            current_passes(&standing(&earlier, &[], two), 0, &hash(1)),
            ["token:a"]
        );
        assert_eq!(void_passes(&earlier, 0, &hash(1), &[], two)[0].actor, "cli");
        assert!(void_passes(&earlier, 0, &hash(1), &[], ReviewRules::default()).is_empty());
    }

    #[test]
    fn a_schedule_move_is_named_on_the_edit_and_read_back() {
        let from = DateTime::parse_from_rfc3339("2030-01-01T09:00:00+09:00")
            .unwrap()
            .to_utc();
        let to = DateTime::parse_from_rfc3339("2026-12-04T03:11:13.016Z")
            .unwrap()
            .to_utc();
        let named = schedule_move_note(from, to);
        assert_eq!(
            named,
            "scheduled_at from 2030-01-01T00:00:00Z to 2026-12-04T03:11:13.016Z"
        );
        assert_eq!(
            schedule_move_in(&format!("edited {named}")),
            Some((from, to))
        );
        assert_eq!(
            schedule_move_in(&format!("edited (text, {named}): approval withdrawn")),
            Some((from, to))
        );
        assert_eq!(
            schedule_move_in(&format!("edited {named}, link")),
            Some((from, to))
        );
        assert_eq!(schedule_move_in("edited scheduled_at"), None);
        assert_eq!(schedule_move_in("edited text"), None);
    }

    #[test]
    fn fails_quarantine_at_max_revisions() {
        let rules = ReviewRules::default();
        assert_eq!(
            decide(VerdictKind::Fail, "token:c", &[], 0, &hash(1), 0, rules).unwrap(),
            Decision::Revise {
                revisions: 1,
                counted: true
            }
        );
        assert_eq!(
            decide(VerdictKind::Fail, "token:c", &[], 0, &hash(1), 1, rules).unwrap(),
            Decision::Quarantine {
                revisions: 2,
                counted: true
            }
        );
        let one = ReviewRules {
            approvals_required: 1,
            max_revisions: 1,
        };
        assert_eq!(
            decide(VerdictKind::Fail, "token:c", &[], 0, &hash(1), 0, one).unwrap(),
            Decision::Quarantine {
                revisions: 1,
                counted: true
            }
        );
    }

    #[test]
    fn a_fail_counts_one_revision_per_round_and_content_and_a_repeat_changes_nothing() {
        use VerdictKind::*;
        let rules = ReviewRules::default();
        assert_eq!(
            decide(Fail, "token:c", &[], 0, &hash(1), 0, rules).unwrap(),
            Decision::Revise {
                revisions: 1,
                counted: true
            }
        );
        let earlier = [verdict(1, Fail, "token:c", 0, 1)];
        // The same critic again on the same content in the same round (a retry whose
        // answer was lost): the earlier verdict, nothing changes.
        assert_eq!(
            decide(Fail, "token:c", &earlier, 0, &hash(1), 1, rules).unwrap(),
            Decision::Repeat { verdict: 1 }
        );
        // Another critic on unchanged content: recorded, but no second revision.
        assert_eq!(
            decide(Fail, "token:d", &earlier, 0, &hash(1), 1, rules).unwrap(),
            Decision::Revise {
                revisions: 1,
                counted: false
            }
        );
        // After an edit (a new round, a new hash) a fail counts again.
        assert_eq!(
            decide(Fail, "token:c", &earlier, 1, &hash(2), 1, rules).unwrap(),
            Decision::Quarantine {
                revisions: 2,
                counted: true
            }
        );
        // A pass after the fail: the same critic failing again is a new verdict, but the
        // content's revision is already counted.
        let passed = [
            verdict(1, Fail, "token:c", 0, 1),
            verdict(2, Pass, "token:d", 0, 1),
        ];
        assert_eq!(
            decide(Fail, "token:c", &passed, 0, &hash(1), 1, rules).unwrap(),
            Decision::Revise {
                revisions: 1,
                counted: false
            }
        );
        // A fail that withdrew an approval was given in the round before the one it
        // started: the same content, so still a repeat, and still counted once.
        assert_eq!(
            decide(Fail, "token:c", &earlier, 1, &hash(1), 1, rules).unwrap(),
            Decision::Repeat { verdict: 1 }
        );
        assert_eq!(
            decide(Fail, "token:d", &earlier, 1, &hash(1), 1, rules).unwrap(),
            Decision::Revise {
                revisions: 1,
                counted: false
            }
        );
        // Two rounds on (edited away and back): the writer revised, so it counts.
        assert_eq!(
            decide(Fail, "token:c", &earlier, 2, &hash(1), 1, rules).unwrap(),
            Decision::Quarantine {
                revisions: 2,
                counted: true
            }
        );
    }

    #[test]
    fn duplicates_normalise_case_space_and_invisible_characters() {
        assert_eq!(
            normalise_text("  Hello,\n\tWORLD\u{200B}  again "),
            "hello, world again"
        );
        assert_eq!(text_key("Hello  world"), text_key("hello world\n"));
        assert_ne!(text_key("hello world"), text_key("hello world!"));
        // Accents are dropped; other scripts read as themselves.
        assert_eq!(normalise_text("猫の宿 ÄÖ"), "猫の宿 ao");
    }

    #[test]
    fn duplicates_normalise_compatibility_forms_and_every_ignorable_character() {
        let plain = text_key("tea at four café");
        for disguised in [
            "tea\u{200E} at four café",                 // left-to-right mark
            "te\u{00AD}a at four café",                 // soft hyphen
            "tea at four cafe\u{0301}",                 // combining acute
            "ｔｅａ at four café",                      // fullwidth letters
            "tea\u{FE0F} at four café",                 // variation selector
            "tea at four café\u{E0020}\u{E007F}",       // tag characters
            "t\u{034F}ea at four café",                 // combining grapheme joiner
            "tea at\u{3164} four café",                 // hangul filler
            "\u{FEFF}tea at four\u{2061} café\u{200B}", // BOM, invisible times, ZWSP
            "tea at four caf\u{00C9}",                  // uppercase precomposed
            "tea\u{061C} at four\u{180E} café\u{1D173}",
        ] {
            assert_eq!(text_key(disguised), plain, "{disguised:?}");
        }
        // A hangul filler is drawn as a blank: between words, it reads as a space.
        assert_eq!(normalise_text("tea\u{3164}\u{3164}time"), "tea tirne");
        assert_eq!(text_key("tea\u{3164}time"), text_key("tea time"));
        assert_ne!(text_key("tea\u{3164}time"), text_key("teatime"));
        // Accents are marks: dropped (issue 26).
        assert_eq!(text_key("tea at four cafe"), plain);
        assert_ne!(text_key("tea at four cafes"), plain);
    }

    /// The attack of issue 26: texts that read alike to people, each accepted as new.
    #[test]
    fn duplicates_fold_lookalike_letters_combining_marks_and_blank_symbols() {
        let plain = text_key("Tea at four. See you there!");
        for disguised in [
            "T\u{0435}a at four. See you there!",               // Cyrillic е
            "Tea \u{0430}t four. See you there!",               // Cyrillic а
            "Tea at f\u{03BF}ur. See you there!",               // Greek ο
            "Tea at four. See you there!\u{2800}",              // braille blank, trailing
            "Tea at four. See you there!\u{1D159}",             // null notehead, trailing
            "Tea at fo\u{0307}ur. See you there!",              // combining dot above on a letter
            "Tea at four. See you th\u{0117}re!",               // the same dot, precomposed (ė)
            "Tea at four. S\u{0435}\u{0435} y\u{03BF}u there!", // Cyrillic and Greek mixed
            "T\u{0435}\u{0430} \u{0430}t f\u{03BF}\u{0307}ur. See you there!\u{2800}\u{1D159}",
            "Tea\u{2800}at four. See\u{1D159}you there!", // blank symbols for spaces
            "Tea at four.\u{3164}See you there!",         // a Hangul filler for a space
            "\u{0422}ea at four. \u{0405}ee you there!",  // Cyrillic capitals Т and Ѕ
            "TEA AT FOUR. SEE YOU THERE!",
            "\u{0422}\u{0415}\u{0410} AT FOUR. SEE Y\u{039F}U T\u{041D}ERE!", // capitals: Т Е А, Greek Ο, Cyrillic Н
            // A second review: a lookalike keeping a mark of its own script, small
            // capitals, invisible format and control characters.
            "Tea at f\u{043E}\u{0483}ur. See you there!", // Cyrillic о with a titlo
            "Tea at f\u{2C9F}\u{2CEF}ur. See you there!", // Coptic ⲟ with its mark
            "\u{1D1B}\u{1D07}\u{1D00} at four. \u{A731}ee you there!", // small capitals ᴛᴇᴀ, ꜱ
            "Tea at four.\u{FFF9} See you there!",        // interlinear annotation anchor
            "Tea at four. See\u{0080} you\u{0001} there!", // C1 and C0 controls
        ] {
            assert_eq!(text_key(disguised), plain, "{disguised:?}");
        }
    }

    /// Texts that read differently keep different keys; a few that UTS #39 reads alike
    /// (digits shaped like letters, `rn` and `m`) share one.
    #[test]
    fn duplicates_keep_texts_that_read_differently_apart() {
        for (a, b) in [
            ("Tea at four.", "Tea at five."),
            ("tea at four", "tea at four!"),
            ("tea time", "teatime"),
            ("version 1.0", "version 2.0"),
            ("Room 12", "Room 13"),
            ("x = y", "x \u{2260} y"),
            ("Tea at four.", "Tea at four?"),
            ("\u{0915}\u{0932}", "\u{0915}\u{0941}\u{0932}"), // Hindi: a vowel sign is a letter's own
            ("\u{043C}\u{0438}\u{0440}", "\u{043C}\u{0435}\u{0440}"), // мир, мер
        ] {
            assert_ne!(text_key(a), text_key(b), "{a:?} vs {b:?}");
        }
        for (a, b) in [
            ("c0ffee at 10", "coffee at lo"),
            ("modern", "rnodern"),
            ("Caf\u{00E9}", "cafe"),
            ("INFO", "info"),
        ] {
            assert_eq!(text_key(a), text_key(b), "{a:?} vs {b:?}");
        }
    }

    /// Stored keys depend on [`normalise_text`] and the Unicode data it reads: a change
    /// to either shows here. Raise `TEXT_KEY_VERSION` with it, so that stores recompute
    /// their keys, then pin the new values.
    #[test]
    fn the_duplicate_key_is_pinned_to_its_version() {
        assert_eq!(TEXT_KEY_VERSION, 2);
        let sample = "\u{FF34}\u{0435}\u{0430}\u{2800}at f\u{03BF}\u{0307}ur, Mochi! 0I|1 \u{2260} \
                      \u{0397}\u{039D}\u{03A5} \u{03B7}\u{03BD}\u{03C5} \u{041D}\u{043D} \u{FB01} \
                      Stra\u{00DF}e \u{00E9}\u{200B} \u{0915}\u{0941}\u{0932}";
        assert_eq!(
            normalise_text(sample),
            "tea at four, rnochi! oill =\u{0338} hny nvu hh fi strasse e \u{0915}\u{0941}\u{0932}"
        );
        assert_eq!(
            text_key(sample),
            "811d6ca993373724a8d67a0d6f6fb49a5ab3452cbba662edc24fad7c98495ff9"
        );
    }

    #[test]
    fn changes_name_fields_and_changed_lines() {
        let before = PostContent {
            channel: ChannelName::parse("c").unwrap(),
            title: Some("Old".into()),
            text: "one\ntwo\nthree".into(),
            media: vec![],
            more: vec![],
            first_comment: None,
            link: None,
            source: None,
        };
        let mut after = before.clone();
        after.text = "one\n2\nthree".into();
        after.title = None;
        after.media = vec![Media::new("https://x.example/a.jpg".into(), None)];
        let change = changes(&before, &after);
        assert_eq!(change.fields, ["title", "text", "media"]);
        assert_eq!(change.text_diff, ["- two", "+ 2"]);
        assert_eq!(line_diff("one\ntwo", "one\ntwo\nthree"), ["+ three"]);
        assert_eq!(change.previous_title.as_deref(), Some("Old"));
        assert!(changes(&before, &before).fields.is_empty());
        assert!(line_diff("a", "a").is_empty());
        assert_eq!(line_diff("a", "a\n"), ["~ line ends changed"]);
        let long_before = "x\n".repeat(10);
        let long_after = (0..300).map(|i| format!("{i}\n")).collect::<String>();
        let diff = line_diff(&long_before, &long_after);
        assert_eq!(diff.len(), MAX_DIFF_LINES + 1);
        assert!(diff.last().unwrap().contains("more changed lines"));
    }

    #[test]
    fn a_change_to_a_later_part_or_the_comment_is_reported() {
        use crate::post::{ChannelName, Part};
        let mut before = PostContent::single(ChannelName::parse("c").unwrap(), "one");
        before.more = vec![Part {
            text: "two".into(),
            media: vec![],
        }];
        let mut after = before.clone();
        after.more[0].text = "two, changed".into();
        after.first_comment = Some("and more".into());
        let change = changes(&before, &after);
        assert_eq!(change.fields, ["parts", "first_comment"]);
        assert_eq!(
            change.text_diff,
            ["- two", "+ two, changed", "+ ---", "+ and more"]
        );
    }
}
