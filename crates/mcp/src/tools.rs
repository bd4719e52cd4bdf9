//! The eleven tools of docs/mcp.md and the critic's two (`get_review_packet`,
//! `submit_verdict`), their argument schemas, output schemas and annotations.
//!
//! Each tool resolves the caller's [`Principal`], calls one [`App`] operation, and
//! answers with the JSON the HTTP API returns for it (the post JSON, `PostDetail`,
//! `QuotaStatus`, the channel list), as text and as structured content that matches the
//! tool's declared output schema ([`crate::schema`]). A list is text as the HTTP API sends
//! it and structured content wrapped in an object (`{"posts": [...], "next"}`,
//! `{"channels": [...]}`), since structured content is always an object. Every
//! [`airlock_app::Error`] becomes a tool error
//! result (`isError: true`) whose text is the error's message followed by its code, and
//! whose structured content is the HTTP API's `{"error": {"code", "message"}}`. Arguments
//! that do not match a tool's schema (unknown fields, wrong types) are tool errors too,
//! naming the tool and what is wrong. No refusal is ever a protocol error.
//!
//! Who the caller is: over stdio the token in `AIRLOCK_TOKEN` is authenticated again on
//! every tool call, so a token revoked while `airlock mcp` runs stops working at its
//! next call; over HTTP the [`crate::http`] guard authenticates every request and puts
//! its [`Principal`] into the request's extensions, where the tool reads it. A tool that
//! finds no principal refuses (fail closed).

use airlock_app::PostFilter;
use airlock_app::check::DraftCheck;
use airlock_app::control::{ChannelStatus, QuotaStatus};
use airlock_app::critic::{ReviewPacket, VerdictInput, VerdictResult};
use airlock_app::posts::{DraftInput, DraftOrigin, Drafted, EditInput, MAX_LIST_LIMIT, PostPage};
use airlock_app::{App, Error, ErrorBody, Principal};
use airlock_core::{ChannelName, Media, Part, Post, PostDetail, PostId, PostStatus, VerdictKind};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, tool, tool_handler, tool_router};
use schemars::JsonSchema;
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use crate::schema;

/// What the server tells every client about airlock when it connects.
pub const INSTRUCTIONS: &str = "\
airlock publishes posts to real channels AT MOST ONCE, inside server-side quotas, with roles. \
Writers: read each channel's rules with list_channels (length limit and how it is counted, \
required and forbidden phrases, media, review settings, budget), check a draft with check_draft \
(it drafts nothing), and discard a draft you no longer want with discard_post; list_posts with \
mine: true lists your own posts a page at a time. \
Lifecycle: draft_post (writer role) creates a draft; approve_post by ANOTHER principal with the \
critic role approves it (a token never approves a post it created or last edited); publish_post \
(publisher role) publishes an approved post now, or airlock's dispatcher publishes it at its \
scheduled_at. update_draft edits a draft (an approved post returns to draft and needs approval \
again); reject_post sends a post back to its writer with a reason. \
Critics: call get_review_packet, review the post against its rubric, then submit_verdict with \
the packet's content_hash and rubric hash (pass, or fail with reasons naming rubric items); a \
verdict on content or a rubric that changed since is refused, so nothing is approved that you \
did not read. Some channels need more than one critic's pass; a post that fails review too \
often is quarantined until a person releases it. A writer reads a fail's reasons in the post's \
error field and verdicts (get_post) and revises the same post: drafting the same text again \
is refused as a duplicate. \
Quotas (a rolling window across all channels and a daily limit per channel) and pauses are \
enforced by the server: a refused call is a tool error that says why and what to do, for \
example when the next quota slot frees or why a channel is paused. Wait for that time instead \
of retrying in a loop; quota_status and list_channels show limits, use and pauses. \
A post whose outcome could not be known (a timeout after sending) becomes needs_review and \
its channel pauses until a person settles it: never draft the same content again to retry. \
Pass an idempotency_key to draft_post so a retried call returns the same post. \
Results are the JSON of airlock's HTTP API.";

/// The MCP server: airlock's tools over one [`App`]. Cheap to clone.
#[derive(Clone)]
pub struct AirlockMcp {
    app: App,
    caller: Caller,
    tool_router: ToolRouter<AirlockMcp>,
}

/// Where a tool call's principal comes from.
#[derive(Clone)]
enum Caller {
    /// A principal given by the embedding program, trusted as is (in-process use).
    Fixed(Principal),
    /// A token authenticated again on every call (stdio), so revoking it takes effect
    /// at once.
    Token(SecretString),
    /// Authenticated on every HTTP request by the guard in [`crate::http`].
    PerRequest,
}

impl std::fmt::Debug for AirlockMcp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let caller = match &self.caller {
            Caller::Fixed(principal) => principal.actor.to_string(),
            Caller::Token(_) => "a token, checked on every call".to_owned(),
            Caller::PerRequest => "per request".to_owned(),
        };
        f.debug_struct("AirlockMcp")
            .field("app", &self.app)
            .field("caller", &caller)
            .finish()
    }
}

impl AirlockMcp {
    /// [`answer`], counting refusals for `/metrics` like the HTTP API does.
    fn answer<T: Serialize>(&self, result: Result<T, Error>) -> CallToolResult {
        self.answer_as(result, None)
    }

    /// [`AirlockMcp::answer`] for a list wrapped in an object: the structured content is
    /// the object, the text the list under `field` (what the HTTP API sends).
    fn answer_list<T: Serialize>(&self, result: Result<T, Error>, field: &str) -> CallToolResult {
        self.answer_as(result, Some(field))
    }

    fn answer_as<T: Serialize>(
        &self,
        result: Result<T, Error>,
        text_field: Option<&str>,
    ) -> CallToolResult {
        if let Err(error) = &result {
            self.app.record_refusal(error);
        }
        answer(result, text_field)
    }

    /// A server whose every tool call acts as `principal`, trusted as given: for a
    /// program that embeds airlock and authenticated its caller itself. `airlock mcp`
    /// uses [`AirlockMcp::for_token`].
    pub fn for_principal(app: App, principal: Principal) -> Self {
        AirlockMcp {
            app,
            caller: Caller::Fixed(principal),
            tool_router: Self::tool_router(),
        }
    }

    /// A server whose every tool call authenticates `token` again before it runs (stdio:
    /// one token per process): a revoked or unknown token makes every later call a tool
    /// error saying so.
    pub fn for_token(app: App, token: SecretString) -> Self {
        AirlockMcp {
            app,
            caller: Caller::Token(token),
            tool_router: Self::tool_router(),
        }
    }

    /// A server that takes each call's principal from its HTTP request, as put there by
    /// the bearer-token guard of [`crate::router`]. Without that guard every call refuses.
    pub(crate) fn per_request(app: App) -> Self {
        AirlockMcp {
            app,
            caller: Caller::PerRequest,
            tool_router: Self::tool_router(),
        }
    }

    async fn principal(&self, context: &RequestContext<RoleServer>) -> Result<Principal, Error> {
        match &self.caller {
            Caller::Fixed(principal) => Ok(principal.clone()),
            Caller::Token(token) => self.app.authenticate(token.expose_secret()).await,
            Caller::PerRequest => context
                .extensions
                .get::<axum::http::request::Parts>()
                .and_then(|parts| parts.extensions.get::<Principal>())
                .cloned()
                .ok_or(Error::Unauthorized),
        }
    }
}

/// One image or video attached to a post.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MediaArg {
    /// Public http(s) URL the platform fetches the file from.
    pub url: String,
    /// Alternative text describing the image, for screen readers.
    #[serde(default)]
    pub alt: Option<String>,
}

impl From<MediaArg> for Media {
    fn from(media: MediaArg) -> Self {
        Media::new(media.url, media.alt)
    }
}

/// One part of a thread: its text and media.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PartArg {
    /// The part's text.
    pub text: String,
    /// Images or videos of this part, each {url, alt}; several make an album or carousel.
    #[serde(default)]
    pub media: Option<Vec<MediaArg>>,
}

impl From<PartArg> for Part {
    fn from(part: PartArg) -> Self {
        Part {
            text: part.text,
            media: part
                .media
                .unwrap_or_default()
                .into_iter()
                .map(Media::from)
                .collect(),
        }
    }
}

fn parts(args: Option<Vec<PartArg>>) -> Option<Vec<Part>> {
    args.map(|parts| parts.into_iter().map(Part::from).collect())
}

/// Arguments of `draft_post`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DraftPostArgs {
    /// A configured channel name (see list_channels), e.g. "threads-main".
    pub channel: String,
    /// The post's text (Markdown for article channels such as wordpress). With `parts`,
    /// leave it out.
    #[serde(default)]
    pub text: String,
    /// A thread: every part in order, each {text, media}; each part after the first is
    /// published as a reply to the one before. Leave out for a single post.
    #[serde(default)]
    pub parts: Option<Vec<PartArg>>,
    /// A comment published under the post once it is out (Instagram, LinkedIn, Threads; a
    /// reply on X, Bluesky and Mastodon).
    #[serde(default)]
    pub first_comment: Option<String>,
    /// Title; required by article channels (wordpress), ignored elsewhere.
    #[serde(default)]
    pub title: Option<String>,
    /// Images or videos to attach, each {url, alt}.
    #[serde(default)]
    pub media: Option<Vec<MediaArg>>,
    /// A link to attach (http or https URL).
    #[serde(default)]
    pub link: Option<String>,
    /// When to publish: RFC 3339 like "2026-12-01T08:00:00+09:00", or "now" (the default).
    /// A time minutes or more in the past is refused unless `allow_past` is true.
    #[serde(default)]
    pub scheduled_at: Option<String>,
    /// Take a past `scheduled_at` on purpose: the post is due at once.
    #[serde(default)]
    pub allow_past: bool,
    /// A test post: published only on sandbox channels, never counted against quotas.
    #[serde(default)]
    pub test: Option<bool>,
    /// Any string of 1-200 characters that identifies this draft request: calling again
    /// with the same key (within 24 hours) returns the same post instead of a second one;
    /// the same key with different content is refused.
    #[serde(default)]
    pub idempotency_key: Option<String>,
}

/// Arguments of `check_draft`: a draft as `draft_post` takes it.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckDraftArgs {
    /// A configured channel name (see list_channels), e.g. "threads-main".
    pub channel: String,
    /// The post's text. With `parts`, leave it out.
    #[serde(default)]
    pub text: String,
    /// A thread: every part in order, each {text, media}.
    #[serde(default)]
    pub parts: Option<Vec<PartArg>>,
    /// A comment published under the post once it is out.
    #[serde(default)]
    pub first_comment: Option<String>,
    /// Title; required by article channels (wordpress).
    #[serde(default)]
    pub title: Option<String>,
    /// Images or videos to attach, each {url, alt}.
    #[serde(default)]
    pub media: Option<Vec<MediaArg>>,
    /// A link to attach (http or https URL).
    #[serde(default)]
    pub link: Option<String>,
    /// When to publish: RFC 3339 or "now" (the default). A time minutes or more in the
    /// past is a problem unless `allow_past` is true.
    #[serde(default)]
    pub scheduled_at: Option<String>,
    /// Take a past `scheduled_at` on purpose.
    #[serde(default)]
    pub allow_past: bool,
    /// A test post: published only on sandbox channels.
    #[serde(default)]
    pub test: Option<bool>,
}

/// The draft as the app takes it, from the arguments of `draft_post` or `check_draft`.
#[allow(clippy::too_many_arguments)]
fn draft_input(
    channel: String,
    text: String,
    parts_args: Option<Vec<PartArg>>,
    first_comment: Option<String>,
    title: Option<String>,
    media: Option<Vec<MediaArg>>,
    link: Option<String>,
    (scheduled_at, allow_past): (Option<String>, bool),
    test: Option<bool>,
) -> DraftInput {
    DraftInput {
        allow_past,
        channel,
        text,
        title,
        media: media
            .unwrap_or_default()
            .into_iter()
            .map(Media::from)
            .collect(),
        link,
        scheduled_at,
        test: test.unwrap_or(false),
        parts: parts(parts_args),
        first_comment,
    }
}

impl From<DraftPostArgs> for DraftInput {
    fn from(args: DraftPostArgs) -> Self {
        draft_input(
            args.channel,
            args.text,
            args.parts,
            args.first_comment,
            args.title,
            args.media,
            args.link,
            (args.scheduled_at, args.allow_past),
            args.test,
        )
    }
}

impl From<CheckDraftArgs> for DraftInput {
    fn from(args: CheckDraftArgs) -> Self {
        draft_input(
            args.channel,
            args.text,
            args.parts,
            args.first_comment,
            args.title,
            args.media,
            args.link,
            (args.scheduled_at, args.allow_past),
            args.test,
        )
    }
}

/// Arguments of `update_draft`: the post and the fields to change.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateDraftArgs {
    /// The post's id.
    #[schemars(range(min = 1))]
    pub id: i64,
    /// New text.
    #[serde(default)]
    pub text: Option<String>,
    /// New title; an empty string clears it.
    #[serde(default)]
    pub title: Option<String>,
    /// New media, replacing all current media; an empty list removes them.
    #[serde(default)]
    pub media: Option<Vec<MediaArg>>,
    /// Every part anew, in order, each {text, media} (replaces text and media too).
    #[serde(default)]
    pub parts: Option<Vec<PartArg>>,
    /// A new first comment; an empty string removes it.
    #[serde(default)]
    pub first_comment: Option<String>,
    /// New link; an empty string clears it.
    #[serde(default)]
    pub link: Option<String>,
    /// New schedule: RFC 3339 or "now"; a past time needs `allow_past`.
    #[serde(default)]
    pub scheduled_at: Option<String>,
    /// Take a past `scheduled_at` on purpose.
    #[serde(default)]
    pub allow_past: bool,
}

/// A post's state (docs/lifecycle.md).
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StatusArg {
    /// Written, editable, waiting for approval.
    Draft,
    /// Approved, waiting for its schedule or a publish_post.
    Approved,
    /// Being published right now.
    Posting,
    /// Published.
    Posted,
    /// Definitely not published.
    Failed,
    /// Outcome unknown; a person must settle it.
    NeedsReview,
}

impl From<StatusArg> for PostStatus {
    fn from(status: StatusArg) -> Self {
        match status {
            StatusArg::Draft => PostStatus::Draft,
            StatusArg::Approved => PostStatus::Approved,
            StatusArg::Posting => PostStatus::Posting,
            StatusArg::Posted => PostStatus::Posted,
            StatusArg::Failed => PostStatus::Failed,
            StatusArg::NeedsReview => PostStatus::NeedsReview,
        }
    }
}

/// Arguments of `list_posts`.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListPostsArgs {
    /// Only posts in this state.
    #[serde(default)]
    pub status: Option<StatusArg>,
    /// Only posts for this channel.
    #[serde(default)]
    pub channel: Option<String>,
    /// Only the posts the caller's token created.
    #[serde(default)]
    pub mine: Option<bool>,
    /// Only posts with ids below this: the `next` of the page before.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub before: Option<i64>,
    /// At most this many posts (1-100, default 100).
    #[serde(default)]
    #[schemars(range(min = 1, max = 100))]
    pub limit: Option<u32>,
}

/// `list_channels`'s structured content.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct ChannelList {
    /// Every configured channel.
    pub channels: Vec<ChannelStatus>,
}

/// `discard_post`'s answer.
#[derive(Debug, Clone, Serialize, utoipa::ToSchema)]
pub struct Discarded {
    /// The post discarded.
    pub id: PostId,
    /// Always true: the draft is gone (its events stay in the ledger).
    pub discarded: bool,
}

/// Arguments naming one post.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PostIdArgs {
    /// The post's id (the `id` field of the post JSON).
    #[schemars(range(min = 1))]
    pub id: i64,
}

/// Arguments of `approve_post`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovePostArgs {
    /// The post's id.
    #[schemars(range(min = 1))]
    pub id: i64,
    /// The content_hash of the post as you reviewed it (from get_post or
    /// get_review_packet). Always pass it: if the post changed since, nothing is approved
    /// and the call is refused as a conflict.
    #[serde(default)]
    pub content_hash: Option<String>,
}

/// Arguments of `reject_post`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RejectPostArgs {
    /// The post's id.
    #[schemars(range(min = 1))]
    pub id: i64,
    /// Why, for the writer who revises it (shown on the post as `error`). Start it with
    /// the rubric item it applies to, like "tone: reads as pushy".
    pub reason: String,
    /// The content_hash of the post as you reviewed it: if the post changed since,
    /// nothing is recorded and the call is refused as a conflict.
    #[serde(default)]
    pub content_hash: Option<String>,
}

/// A verdict.
#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum VerdictArg {
    /// Every rubric item holds: counts toward approval.
    Pass,
    /// Some rubric item does not hold: the post returns to its writer with your reasons.
    Fail,
}

/// Arguments of `submit_verdict`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitVerdictArgs {
    /// The post's id.
    #[schemars(range(min = 1))]
    pub id: i64,
    /// "pass" or "fail".
    pub verdict: VerdictArg,
    /// The review packet's content_hash: the content you reviewed.
    pub content_hash: String,
    /// The review packet's rubric.hash: the rubric you reviewed against.
    pub rubric_hash: String,
    /// Short reasons, each starting with the rubric item id it applies to and a colon
    /// ("claims: the opening hours are wrong"). At least one for a fail; optional for a pass.
    #[serde(default)]
    pub reasons: Vec<String>,
}

/// No arguments.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NoArgs {}

#[tool_router]
impl AirlockMcp {
    /// Creates a draft.
    #[tool(
        name = "draft_post",
        description = "Create a draft post for a configured channel. Needs the writer role. \
Nothing is published yet: another principal with the critic role must approve it (approve_post), \
then a publisher publishes it (publish_post) or airlock does at scheduled_at. Pass idempotency_key \
to make retries safe: the same key returns the same post. The same text as a post already queued \
or published on the channel within a few days is refused as a duplicate naming that post: revise \
that post instead. A draft that breaks only the content policy (a required or forbidden \
phrase, a missing title) is drafted, and its `violations` come back beside the post JSON: fix \
them with update_draft, or no critic can approve it. check_draft tells the same without \
drafting. `test: true` drafts a test post, published only on sandbox channels. Returns the post \
JSON (status draft) with `violations`.",
        output_schema = schema::of::<Drafted>(),
        annotations(
            title = "Draft a post",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = false,
            open_world_hint = false
        )
    )]
    async fn draft_post(
        &self,
        Parameters(args): Parameters<DraftPostArgs>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let result = async {
            let who = self.principal(&context).await?;
            let key = args.idempotency_key.clone();
            self.app
                .create_post(&who, args.into(), key, DraftOrigin::default())
                .await
        }
        .await;
        self.answer(result)
    }

    /// Checks a draft without drafting it.
    #[tool(
        name = "check_draft",
        description = "Check a draft before drafting it: takes what draft_post takes (no \
idempotency_key) and drafts nothing. Needs the writer role. Answers whether draft_post would \
accept it (`accepted`) and whether a critic could approve it as it is (`approvable`); every \
problem in `violations`, each with a machine `kind` (too_long, forbidden_phrase, \
missing_required_phrase, missing_title, media_type, invalid_url, draft_limit, ...), what it \
`blocks` (draft, approval or publish), its `part` in a thread and a message saying what to change; \
each part's `length` as the platform counts it against `max_chars`; the `cost` against a \
channel's money budget; and the channel's `quota` now, with `next_slot_at` (null: a slot is free). \
An unknown channel is an error. A duplicate of a queued text is found only when drafting.",
        output_schema = schema::of::<DraftCheck>(),
        annotations(
            title = "Check a draft",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn check_draft(
        &self,
        Parameters(args): Parameters<CheckDraftArgs>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let result = async {
            let who = self.principal(&context).await?;
            self.app.check_draft(&who, args.into()).await
        }
        .await;
        self.answer(result)
    }

    /// Discards a draft.
    #[tool(
        name = "discard_post",
        description = "Discard a draft you no longer want (it leaves your drafts, and the drafts \
limit, at once; its events stay in the ledger). Needs the writer role. Only drafts: an approved \
post must be unapproved first. A draft that failed review only an operator discards (revise it \
instead), and a quarantined one waits for a person. Returns {id, discarded: true}.",
        output_schema = schema::of::<Discarded>(),
        annotations(
            title = "Discard a draft",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn discard_post(
        &self,
        Parameters(args): Parameters<PostIdArgs>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let result = async {
            let who = self.principal(&context).await?;
            let id = PostId(args.id);
            self.app.discard(&who, id).await?;
            Ok(Discarded {
                id,
                discarded: true,
            })
        }
        .await;
        self.answer(result)
    }

    /// Edits a draft.
    #[tool(
        name = "update_draft",
        description = "Change a draft's text, title, media, link or scheduled_at (fields left out \
stay as they are). Needs the writer role. Editing an approved post returns it to draft: it needs \
approval again. Posts being published or already published cannot be edited, nor quarantined ones \
(a person releases those). Returns the post JSON.",
        output_schema = schema::of::<Post>(),
        annotations(
            title = "Update a draft",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn update_draft(
        &self,
        Parameters(args): Parameters<UpdateDraftArgs>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let result = async {
            let who = self.principal(&context).await?;
            let edit = EditInput {
                text: args.text,
                title: args.title,
                media: args
                    .media
                    .map(|media| media.into_iter().map(Media::from).collect()),
                link: args.link,
                scheduled_at: args.scheduled_at,
                allow_past: args.allow_past,
                parts: parts(args.parts),
                first_comment: args.first_comment,
            };
            self.app.edit_post(&who, PostId(args.id), edit).await
        }
        .await;
        self.answer(result)
    }

    /// Lists posts.
    #[tool(
        name = "list_posts",
        description = "List posts, newest first, a page at a time (`limit`, 1-100, default \
100), optionally only one status and/or channel, or only your own (`mine: true`). Read-only; any \
role. The text is a JSON array of posts whose text is cut to its first 500 characters \
(text_truncated says whether it was; get_post gives the whole text); the structured content is \
{posts, next}: pass `before: next` for the next page (null: there is none).",
        output_schema = schema::of::<PostPage>(),
        annotations(
            title = "List posts",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_posts(
        &self,
        Parameters(args): Parameters<ListPostsArgs>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let result = async {
            let who = self.principal(&context).await?;
            let channel = args
                .channel
                .as_deref()
                .map(ChannelName::parse)
                .transpose()
                .map_err(|e| Error::Invalid(e.to_string()))?;
            if args
                .limit
                .is_some_and(|l| !(1..=MAX_LIST_LIMIT).contains(&l))
            {
                return Err(Error::Invalid(format!(
                    "limit is 1-{MAX_LIST_LIMIT}: leave it out for {MAX_LIST_LIMIT}"
                )));
            }
            if args.before.is_some_and(|b| b < 1) {
                return Err(Error::Invalid(
                    "before is a post id (1 or more): the `next` of the page before".into(),
                ));
            }
            let filter = PostFilter {
                status: args.status.map(PostStatus::from),
                channel,
                before: args.before.map(PostId),
                limit: args.limit,
                created_by: args.mine.unwrap_or(false).then(|| who.actor.to_string()),
                ..PostFilter::default()
            };
            self.app.list_post_page(&who, &filter).await
        }
        .await;
        self.answer_list(result, "posts")
    }

    /// Shows one post.
    #[tool(
        name = "get_post",
        description = "One post with its events (who moved it when), publish intents, quota \
reservations and review verdicts (pass or fail, by whom, with reasons naming rubric items). A \
writer reads a critic's reasons here and in the post's error field. Read-only; any role. Returns \
the post JSON plus events, intents, reservations and verdicts.",
        output_schema = schema::of::<PostDetail>(),
        annotations(
            title = "Get a post",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn get_post(
        &self,
        Parameters(args): Parameters<PostIdArgs>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let result = async {
            let who = self.principal(&context).await?;
            self.app.get_post(&who, PostId(args.id)).await
        }
        .await;
        self.answer(result)
    }

    /// The review packet of a post.
    #[tool(
        name = "get_review_packet",
        description = "Everything a critic needs to review one post, in one call: the post, its \
content_hash, the channel's content policy (with what it finds wrong now), limits and review rules \
(approvals_required, max_revisions), the rubric to review against with its hash and item ids, \
earlier verdicts with their reasons, the passes that count now, and what the writer changed since \
the last verdict; verdict_refused says if you may not give a verdict now and why. Read-only; any \
role. Review the post against every rubric item, then call submit_verdict with this packet's \
content_hash and rubric.hash.",
        output_schema = schema::of::<ReviewPacket>(),
        annotations(
            title = "Get a review packet",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn get_review_packet(
        &self,
        Parameters(args): Parameters<PostIdArgs>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let result = async {
            let who = self.principal(&context).await?;
            self.app.review_packet(&who, PostId(args.id)).await
        }
        .await;
        self.answer(result)
    }

    /// Gives a verdict.
    #[tool(
        name = "submit_verdict",
        description = "Give your verdict on a post you reviewed with get_review_packet. Needs the \
critic role. Pass the packet's content_hash and rubric_hash: if the post or the rubric changed \
since you read them, nothing is recorded and the call is refused (fetch the packet again). \
\"pass\": counts toward approval; the post is approved once the channel's approvals_required \
different critics passed this same content (you cannot pass your own writing, nor count twice). \
\"fail\": give reasons, each starting with a rubric item id and a colon (\"tone: too pushy\"); the \
post returns to its writer, who reads your reasons; a reason starting with \"policy:\" names the \
channel's content policy instead of a rubric item. After the channel's max_revisions fails it is \
quarantined for a person. Calling it again with the same arguments after it took effect (a retry) \
records nothing and answers the same. Returns what the verdict did (effect: approved, \
awaiting_approvals, returned_to_writer or quarantined), a message, the verdict as recorded and \
the post JSON.",
        output_schema = schema::of::<VerdictResult>(),
        annotations(
            title = "Submit a verdict",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn submit_verdict(
        &self,
        Parameters(args): Parameters<SubmitVerdictArgs>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let result = async {
            let who = self.principal(&context).await?;
            let input = VerdictInput {
                verdict: match args.verdict {
                    VerdictArg::Pass => VerdictKind::Pass,
                    VerdictArg::Fail => VerdictKind::Fail,
                },
                reasons: args.reasons,
                content_hash: Some(args.content_hash),
                rubric_hash: Some(args.rubric_hash),
            };
            self.app.give_verdict(&who, PostId(args.id), input).await
        }
        .await;
        self.answer(result)
    }

    /// Approves a draft.
    #[tool(
        name = "approve_post",
        description = "Approve a draft for publishing (draft -> approved) once the channel's \
content policy passes: a pass verdict under the channel's rubric. Always pass content_hash, the \
hash of the content you reviewed: if the post changed since, nothing is approved. The approved \
content is fixed by its hash, and any later edit withdraws the approval. On channels that need \
more than one critic, the post stays a draft until enough different critics passed it. Needs the \
critic role, and a token never approves a post it created or last edited (separation of duties). \
Critic agents should prefer get_review_packet and submit_verdict. Returns the post JSON.",
        output_schema = schema::of::<Post>(),
        annotations(
            title = "Approve a post",
            read_only_hint = false,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn approve_post(
        &self,
        Parameters(args): Parameters<ApprovePostArgs>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let result = async {
            let who = self.principal(&context).await?;
            self.app
                .approve_hash(&who, PostId(args.id), args.content_hash)
                .await
        }
        .await;
        self.answer(result)
    }

    /// Rejects a post.
    #[tool(
        name = "reject_post",
        description = "Reject a draft or an approved post with a reason (a fail verdict): it stays \
(or returns to) draft, with the reason in its error field, for the writer to revise; after the \
channel's max_revisions fails the post is quarantined for a person. Withdraws an approval. Pass \
content_hash, the hash of the content you reviewed. Calling it again on the same content (a \
retry, whatever the reason says, as long as nobody passed or revised it since) records and counts \
nothing more and returns the same post. Needs the critic role. Returns the post JSON.",
        output_schema = schema::of::<Post>(),
        annotations(
            title = "Reject a post",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn reject_post(
        &self,
        Parameters(args): Parameters<RejectPostArgs>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let result = async {
            let who = self.principal(&context).await?;
            self.app
                .reject_hash(&who, PostId(args.id), &args.reason, args.content_hash)
                .await
        }
        .await;
        self.answer(result)
    }

    /// Publishes an approved post now.
    #[tool(
        name = "publish_post",
        description = "Publish an approved post to its real channel now, whatever its schedule, \
through airlock's guarded path: pauses, the approved content hash, the content policy and the \
quotas are checked, and the post is sent at most once; it cannot be unpublished. Needs the \
publisher role. Returns the post JSON (status posted), or an error saying why not: over quota \
and when the next slot frees, paused and the reason, not approved, or an unknown outcome that \
now needs a person's review (do not retry).",
        output_schema = schema::of::<Post>(),
        annotations(
            title = "Publish a post",
            read_only_hint = false,
            destructive_hint = true,
            idempotent_hint = true,
            open_world_hint = true
        )
    )]
    async fn publish_post(
        &self,
        Parameters(args): Parameters<PostIdArgs>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let result = async {
            let who = self.principal(&context).await?;
            self.app.publish_now(&who, PostId(args.id)).await
        }
        .await;
        self.answer(result)
    }

    /// Quota use.
    #[tool(
        name = "quota_status",
        description = "Quota use now: the rolling window across all channels and each channel's \
daily limit (used, limit, remaining), with when the next slot frees, and for channels with a \
money budget (X) the dollars spent and left this month (`budget`). Read-only; any role.",
        output_schema = schema::of::<QuotaStatus>(),
        annotations(
            title = "Quota status",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn quota_status(
        &self,
        Parameters(NoArgs {}): Parameters<NoArgs>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let result = async {
            let who = self.principal(&context).await?;
            self.app.quota_status(&who).await
        }
        .await;
        self.answer(result)
    }

    /// Channels.
    #[tool(
        name = "list_channels",
        description = "The configured channels and their rules, to read before drafting: name, \
kind, expected account, whether publishing is paused and why, today's use against the daily \
limit, the content `policy` (max_chars and how length is counted, required and forbidden \
phrases, title, media and thread rules), the `media` it takes (types, sizes, video), how posts \
are `review`ed (approvals_required, max_revisions, the rubric's origin, hash and item ids) and, \
for channels with one, the money `budget` spent and left this month. Read-only; any role. The \
text is the JSON array of channels; the structured content is {channels}.",
        output_schema = schema::of::<ChannelList>(),
        annotations(
            title = "List channels",
            read_only_hint = true,
            destructive_hint = false,
            idempotent_hint = true,
            open_world_hint = false
        )
    )]
    async fn list_channels(
        &self,
        Parameters(NoArgs {}): Parameters<NoArgs>,
        context: RequestContext<RoleServer>,
    ) -> CallToolResult {
        let result = async {
            let who = self.principal(&context).await?;
            let channels = self.app.channel_statuses(&who).await?;
            Ok(ChannelList { channels })
        }
        .await;
        self.answer_list(result, "channels")
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for AirlockMcp {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(
                Implementation::new("airlock", env!("CARGO_PKG_VERSION"))
                    .with_title("airlock: drafts, review and at-most-once publishing"),
            )
            .with_instructions(INSTRUCTIONS)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, rmcp::ErrorData> {
        let name = request.name.to_string();
        let call = ToolCallContext::new(self, request, context);
        let response = self.tool_router.call(call).await?;
        Ok(explain_argument_error(&name, response))
    }
}

/// A tool's answer: the JSON on success, as text and as structured content, a tool error
/// on any refusal or failure. With `text_field`, the text is that field of the object (a
/// list wrapped for the structured content).
fn answer<T: Serialize>(result: Result<T, Error>, text_field: Option<&str>) -> CallToolResult {
    match result {
        Ok(value) => {
            let value = serde_json::to_value(&value).expect("airlock's JSON types serialize");
            let text = match text_field {
                Some(field) => value[field].to_string(),
                None => value.to_string(),
            };
            let mut ok = CallToolResult::success(vec![ContentBlock::text(text)]);
            debug_assert!(value.is_object(), "structured content is an object");
            ok.structured_content = Some(value);
            ok
        }
        Err(error) => {
            if !error.is_refusal() {
                tracing::warn!(code = error.code(), "MCP tool call failed: {error}");
            }
            refusal(error.code(), &error.to_string())
        }
    }
}

/// A tool error with the message and code, like the HTTP API's error JSON.
fn refusal(code: &str, message: &str) -> CallToolResult {
    let mut result = CallToolResult::error(vec![ContentBlock::text(format!(
        "{message} [code: {code}]"
    ))]);
    result.structured_content = Some(ErrorBody::new(code, message).to_value());
    result
}

/// rmcp answers arguments that do not deserialize with a bare tool error; say which tool
/// and what to do, in the same shape as every other refusal.
fn explain_argument_error(tool: &str, response: CallToolResponse) -> CallToolResponse {
    const PREFIX: &str = "failed to deserialize parameters: ";
    let CallToolResponse::Complete(result) = &response else {
        return response;
    };
    if result.is_error != Some(true) || result.structured_content.is_some() {
        return response;
    }
    let text = result
        .content
        .iter()
        .find_map(|block| block.as_text().map(|t| t.text.clone()))
        .unwrap_or_default();
    let Some(problem) = text.strip_prefix(PREFIX) else {
        return response;
    };
    refusal(
        "invalid",
        &format!(
            "invalid arguments for {tool}: {problem}; see the tool's input schema in tools/list"
        ),
    )
    .into()
}
