//! `airlock post ...`: drafts and the post lifecycle, acting as the local operator.

use std::path::PathBuf;

use clap::{Args, Subcommand};

use airlock_app::posts::{DraftInput, DraftOrigin, EditInput, EditOptions};
use airlock_app::review::Resolution;
use airlock_app::{App, Principal};
use airlock_core::limits::{MAX_TEXT_CHARS, MAX_TEXT_FILE_BYTES};
use airlock_core::{ChannelName, Media, Part, Post, PostId, PostStatus};
use airlock_store::PostFilter;

use crate::config::Config;
use crate::output::{
    print_json, print_post_detail, print_post_line, print_posts, print_review_packet,
};
use crate::{CmdResult, Failure, wiring};

/// How many posts `post list` prints without `--limit`.
pub const LIST_DEFAULT: u32 = 100;

/// The most `post list --limit` prints: one listing stays a bounded read.
pub const LIST_MAX: u32 = 10_000;

#[derive(Debug, Subcommand)]
pub enum PostCommand {
    /// Create a draft; prints its id.
    Add(AddArgs),
    /// Edit a draft (an approved post goes back to draft).
    Edit(EditArgs),
    /// Approve a draft: a pass verdict (the content policy must pass; on a channel with
    /// approvals_required above one, it stays a draft until enough critics passed).
    Approve {
        #[command(flatten)]
        id: IdArgs,
        /// The content hash you reviewed (from `post show` or `post review`): if the post
        /// changed since, nothing is approved (exit 2).
        #[arg(long, value_name = "CONTENT_HASH")]
        hash: Option<String>,
    },
    /// Reject a draft or an approved post, with a reason: a fail verdict (the channel's
    /// max_revisions-th fail quarantines the post).
    Reject {
        #[command(flatten)]
        id: IdArgs,
        /// Why; start it with a rubric item to name it (`tone: reads as pushy`).
        #[arg(long)]
        reason: String,
        /// The content hash you reviewed: if the post changed since, nothing is recorded.
        #[arg(long, value_name = "CONTENT_HASH")]
        hash: Option<String>,
    },
    /// Release a quarantined post: a plain draft again, its failed reviews forgotten.
    Release(IdArgs),
    /// The review packet: the post, its hash, the channel's policy and review rules, the
    /// rubric with its hash, earlier verdicts and what changed since the last one.
    Review(IdArgs),
    /// Withdraw an approval.
    Unapprove(IdArgs),
    /// Discard a draft.
    Discard(IdArgs),
    /// Publish an approved post now, through the guarded path.
    Publish(IdArgs),
    /// List posts, newest first.
    List {
        /// Only this status.
        #[arg(long)]
        status: Option<String>,
        /// Only this channel.
        #[arg(long)]
        channel: Option<String>,
        /// At most this many.
        #[arg(long, default_value_t = LIST_DEFAULT)]
        limit: u32,
        /// Only quarantined posts.
        #[arg(long)]
        quarantined: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show a post with its events, intents and reservation.
    Show(IdArgs),
    /// Settle a post that needs review.
    Resolve {
        #[command(flatten)]
        id: IdArgs,
        /// It went out.
        #[arg(
            long,
            conflicts_with = "not_published",
            required_unless_present = "not_published"
        )]
        published: bool,
        /// Where it went out.
        #[arg(long, requires = "published")]
        permalink: Option<String>,
        /// Its id on the platform (needed for a part of a thread that is not the last:
        /// the next part replies to it).
        #[arg(long, value_name = "ID", requires = "published")]
        platform_post_id: Option<String>,
        /// It did not go out.
        #[arg(long)]
        not_published: bool,
        /// Resume the post's channel in the same step, once it is settled.
        #[arg(long)]
        resume: bool,
    },
    /// Return a failed post to the queue.
    Requeue(IdArgs),
    /// Read a published post back from its platform now, recording `verified` or
    /// `verify_failed` (clears a verification alert once the platform shows it).
    Verify(IdArgs),
    /// Add a note to a post's timeline.
    Note {
        #[command(flatten)]
        id: IdArgs,
        /// The note.
        #[arg(long)]
        text: String,
    },
}

#[derive(Debug, Args)]
pub struct IdArgs {
    /// The post id.
    id: String,
    /// Print the post as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub struct AddArgs {
    /// The channel.
    #[arg(long)]
    channel: String,
    /// The text.
    #[arg(
        long,
        conflicts_with_all = ["text_file", "part", "thread_file"],
        required_unless_present_any = ["text_file", "part", "thread_file"]
    )]
    text: Option<String>,
    /// Read the text from a file.
    #[arg(long, value_name = "F", conflicts_with_all = ["part", "thread_file"])]
    text_file: Option<PathBuf>,
    #[command(flatten)]
    thread: ThreadArgs,
    /// Title (article channels).
    #[arg(long)]
    title: Option<String>,
    /// When it may go out: RFC 3339 or `now`.
    #[arg(long, value_name = "TIME")]
    at: Option<String>,
    /// Take an `--at` in the past on purpose (it is due at once).
    #[arg(long, requires = "at")]
    allow_past: bool,
    /// Media `URL` or `URL|ALT` (repeatable).
    #[arg(long, value_name = "URL[|ALT]")]
    media: Vec<String>,
    /// A link.
    #[arg(long)]
    link: Option<String>,
    /// A test post: published only on sandbox channels, never counted.
    #[arg(long)]
    test: bool,
    /// Draft it even if the same text is already queued or published on the channel
    /// within its duplicate_window.
    #[arg(long)]
    allow_duplicate: bool,
    /// Print the post as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
pub struct EditArgs {
    /// The post id.
    id: String,
    /// New text.
    #[arg(long, conflicts_with_all = ["text_file", "part", "thread_file"])]
    text: Option<String>,
    /// Read the new text from a file.
    #[arg(long, value_name = "F", conflicts_with_all = ["part", "thread_file"])]
    text_file: Option<PathBuf>,
    #[command(flatten)]
    thread: ThreadArgs,
    /// New title (empty clears it).
    #[arg(long)]
    title: Option<String>,
    /// New time: RFC 3339 or `now`.
    #[arg(long, value_name = "TIME")]
    at: Option<String>,
    /// Take an `--at` in the past on purpose (it is due at once).
    #[arg(long, requires = "at")]
    allow_past: bool,
    /// Replace the media with these (repeatable).
    #[arg(long, value_name = "URL[|ALT]")]
    media: Vec<String>,
    /// Remove all media.
    #[arg(long, conflicts_with = "media")]
    no_media: bool,
    /// New link (empty clears it).
    #[arg(long)]
    link: Option<String>,
    /// Change the text even if it becomes that of a post already queued or published on
    /// the channel within its duplicate_window.
    #[arg(long)]
    allow_duplicate: bool,
    /// Print the post as JSON.
    #[arg(long)]
    json: bool,
}

/// A thread and its first comment (docs/parts.md).
#[derive(Debug, Args)]
pub struct ThreadArgs {
    /// One part of a thread, in order (repeatable); `--media` goes with the first.
    #[arg(long, value_name = "TEXT", conflicts_with = "thread_file")]
    part: Vec<String>,
    /// A thread from a Markdown file: parts separated by `---` lines, a line
    /// `![alt](url)` an image of its part.
    #[arg(long, value_name = "F")]
    thread_file: Option<PathBuf>,
    /// A comment published under the post once it is out (an empty one removes it).
    #[arg(long, value_name = "TEXT")]
    first_comment: Option<String>,
}

impl ThreadArgs {
    /// The parts given, if any; `media` (from `--media`) goes with the first.
    fn parts(&self, media: &[Media]) -> Result<Option<Vec<Part>>, Failure> {
        if let Some(path) = &self.thread_file {
            let markdown = read_text_file(path)?;
            let parts = airlock_core::thread::parse_thread(&markdown)
                .map_err(|e| Failure::refused(format!("--thread-file {}: {e}", path.display())))?;
            return Ok(Some(with_first_media(parts, media)));
        }
        if self.part.is_empty() {
            return Ok(None);
        }
        let parts = self
            .part
            .iter()
            .map(|text| Part {
                text: text.clone(),
                media: Vec::new(),
            })
            .collect();
        Ok(Some(with_first_media(parts, media)))
    }
}

fn with_first_media(mut parts: Vec<Part>, media: &[Media]) -> Vec<Part> {
    if let Some(first) = parts.first_mut() {
        first.media.extend(media.iter().cloned());
    }
    parts
}

fn parse_id(id: &str) -> Result<PostId, Failure> {
    id.parse()
        .map_err(|e: airlock_core::InvalidValue| Failure::refused(e.to_string()))
}

fn read_text(text: Option<String>, file: Option<PathBuf>) -> Result<Option<String>, Failure> {
    match (text, file) {
        (Some(text), _) => Ok(Some(text)),
        (None, Some(path)) => read_text_file(&path).map(Some),
        (None, None) => Ok(None),
    }
}

/// Reads a `--text-file`, never more than [`MAX_TEXT_FILE_BYTES`] (a text at the
/// longest a post may be): a larger file, or an endless one, is refused naming the limit
/// before it is read into memory. The character limits are checked by `app`.
fn read_text_file(path: &std::path::Path) -> Result<String, Failure> {
    use std::io::Read;
    let unreadable = |e: std::io::Error| {
        Failure::refused(format!("cannot read --text-file {}: {e}", path.display()))
    };
    let file = std::fs::File::open(path).map_err(unreadable)?;
    let mut bytes = Vec::new();
    file.take(MAX_TEXT_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > MAX_TEXT_FILE_BYTES {
        return Err(Failure::refused(format!(
            "--text-file {} is larger than {MAX_TEXT_FILE_BYTES} bytes: a post's text is at most {MAX_TEXT_CHARS} characters; shorten it",
            path.display()
        )));
    }
    String::from_utf8(bytes)
        .map_err(|_| Failure::refused(format!("--text-file {} is not UTF-8 text", path.display())))
}

fn parse_media(args: &[String]) -> Result<Vec<Media>, Failure> {
    args.iter()
        .map(|m| Media::parse_cli(m).map_err(|e| Failure::refused(e.to_string())))
        .collect()
}

fn show(post: &Post, json: bool, verb: &str) {
    if json {
        print_json(post);
    } else {
        println!("post {} {verb}", post.id);
        print_post_line(post);
    }
}

pub async fn run(config: &Config, command: PostCommand) -> CmdResult {
    let needs_adapters = matches!(command, PostCommand::Publish(_) | PostCommand::Verify(_));
    let app = if needs_adapters {
        wiring::app_for_publishing(config).await?
    } else {
        wiring::app_for_ledger(config).await?
    };
    let reads = matches!(
        command,
        PostCommand::List { .. } | PostCommand::Show(_) | PostCommand::Review(_)
    );
    let me = if reads {
        Principal::cli()
    } else {
        crate::operator::acting(config, &app).await?
    };
    match command {
        PostCommand::Add(args) => add(&app, &me, args).await,
        PostCommand::Edit(args) => {
            let id = parse_id(&args.id)?;
            let media = if args.no_media {
                Some(Vec::new())
            } else if args.media.is_empty() {
                None
            } else {
                Some(parse_media(&args.media)?)
            };
            let parts = args.thread.parts(media.as_deref().unwrap_or_default())?;
            let input = EditInput {
                text: read_text(args.text, args.text_file)?,
                title: args.title,
                media: media.filter(|_| parts.is_none()),
                parts,
                first_comment: args.thread.first_comment,
                link: args.link,
                scheduled_at: args.at,
                allow_past: args.allow_past,
            };
            let options = EditOptions {
                allow_duplicate: args.allow_duplicate,
            };
            let post = app.edit_post_with(&me, id, input, options).await?;
            show(&post, args.json, "edited");
            Ok(())
        }
        PostCommand::Approve { id, hash } => {
            let post = app.approve_hash(&me, parse_id(&id.id)?, hash).await?;
            let verb = if post.status == PostStatus::Approved {
                "approved"
            } else {
                "passed: it needs more critics' passes before it is approved"
            };
            show(&post, id.json, verb);
            Ok(())
        }
        PostCommand::Reject { id, reason, hash } => {
            let post = app
                .reject_hash(&me, parse_id(&id.id)?, &reason, hash)
                .await?;
            let verb = if post.is_quarantined() {
                "rejected and quarantined: an operator releases it with `airlock post release`"
            } else {
                "rejected"
            };
            show(&post, id.json, verb);
            Ok(())
        }
        PostCommand::Release(args) => {
            let post = app.release(&me, parse_id(&args.id)?).await?;
            show(&post, args.json, "released: a draft again");
            Ok(())
        }
        PostCommand::Review(args) => {
            let packet = app.review_packet(&me, parse_id(&args.id)?).await?;
            if args.json {
                print_json(&packet);
            } else {
                print_review_packet(&packet);
            }
            Ok(())
        }
        PostCommand::Unapprove(args) => {
            let post = app.unapprove(&me, parse_id(&args.id)?).await?;
            show(&post, args.json, "unapproved");
            Ok(())
        }
        PostCommand::Discard(args) => {
            let id = parse_id(&args.id)?;
            app.discard(&me, id).await?;
            if args.json {
                print_json(&serde_json::json!({"id": id, "discarded": true}));
            } else {
                println!("post {id} discarded");
            }
            Ok(())
        }
        PostCommand::Publish(args) => {
            let post = app.publish_now(&me, parse_id(&args.id)?).await?;
            show(&post, args.json, "published");
            Ok(())
        }
        PostCommand::List {
            status,
            channel,
            limit,
            quarantined,
            json,
        } => {
            let filter = PostFilter {
                status: status
                    .map(|s| s.parse::<PostStatus>())
                    .transpose()
                    .map_err(|e| Failure::refused(e.to_string()))?,
                channel: channel
                    .map(|c| app.channel(&c).map(|c| c.name.clone()))
                    .transpose()?,
                before: None,
                slot: None,
                limit: Some(limit.clamp(1, LIST_MAX)),
                platform_post_id: None,
                quarantined: quarantined.then_some(true),
                created_by: None,
                goes_out: None,
            };
            let posts = app.list_posts(&me, &filter).await?;
            if json {
                print_json(&posts);
            } else {
                print_posts(&posts);
            }
            Ok(())
        }
        PostCommand::Show(args) => {
            let detail = app.get_post(&me, parse_id(&args.id)?).await?;
            if args.json {
                print_json(&detail);
            } else {
                print_post_detail(&detail);
            }
            Ok(())
        }
        PostCommand::Resolve {
            id,
            published,
            permalink,
            platform_post_id,
            not_published: _,
            resume,
        } => {
            let resolution = if published {
                Resolution::Published {
                    permalink,
                    platform_post_id,
                }
            } else {
                Resolution::NotPublished
            };
            let id_arg = parse_id(&id.id)?;
            let post = if resume {
                // Only a pause a post in doubt set is lifted; what else holds the
                // channel is said below.
                app.resolve_and_resume(&me, id_arg, resolution).await?.0
            } else {
                app.resolve(&me, id_arg, resolution).await?
            };
            let channel = post.content.channel.as_str();
            show(&post, id.json, "resolved");
            // What is left to do, in one step: a pause that still holds the channel
            // (its reason, read now, names the step).
            if let Some(pause) = app
                .pauses(&me)
                .await?
                .into_iter()
                .find(|p| p.scope == channel || p.scope == "*")
            {
                let what = if pause.scope == "*" {
                    "all publishing"
                } else {
                    channel
                };
                let hint = if pause.reason.contains("airlock resume") {
                    String::new()
                } else {
                    format!(
                        ": resume it with `airlock resume {}` once nothing else needs review",
                        airlock_app::publish::scope_arg(&pause.scope)
                    )
                };
                eprintln!("airlock: {what} is still paused ({}){hint}", pause.reason);
            }
            Ok(())
        }
        PostCommand::Requeue(args) => {
            let post = app.requeue(&me, parse_id(&args.id)?).await?;
            show(&post, args.json, "requeued");
            Ok(())
        }
        PostCommand::Verify(args) => {
            use airlock_app::publish::VerifyOutcome;
            let id = parse_id(&args.id)?;
            match app.verify_post(&me, id).await? {
                VerifyOutcome::Verified(post) => {
                    show(&post, args.json, "verified: the platform shows it");
                    Ok(())
                }
                VerifyOutcome::Failed(post) => {
                    show(&post, args.json, "not verified");
                    Err(Failure::failed(format!(
                        "post {id}: the platform does not show it; `verify_failed` recorded: see `airlock post show {id}` and look at the platform"
                    )))
                }
                VerifyOutcome::Unsupported(_) => Err(Failure::refused(format!(
                    "post {id}: its channel's platform cannot read posts back; check it by hand and note what you found with `airlock post note`"
                ))),
            }
        }
        PostCommand::Note { id, text } => {
            let post_id = parse_id(&id.id)?;
            app.add_note(&me, post_id, &text).await?;
            if id.json {
                print_json(&serde_json::json!({"id": post_id, "noted": true}));
            } else {
                println!("post {post_id}: note added");
            }
            Ok(())
        }
    }
}

async fn add(app: &App, me: &Principal, args: AddArgs) -> CmdResult {
    let text = read_text(args.text, args.text_file)?.unwrap_or_default();
    let media = parse_media(&args.media)?;
    let parts = args.thread.parts(&media)?;
    let input = DraftInput {
        channel: args.channel,
        text,
        title: args.title,
        media: if parts.is_some() { Vec::new() } else { media },
        parts,
        first_comment: args.thread.first_comment,
        link: args.link,
        scheduled_at: args.at,
        allow_past: args.allow_past,
        test: args.test,
    };
    let origin = DraftOrigin {
        allow_duplicate: args.allow_duplicate,
        ..DraftOrigin::default()
    };
    let created = app.create_post(me, input, None, origin).await?;
    if args.json {
        print_json(&created.post);
    } else {
        println!("{}", created.post.id);
    }
    Ok(())
}

/// Channel names as given on the command line, checked against the configuration.
pub fn channel_list(app: &App, names: &[String]) -> Result<Vec<ChannelName>, Failure> {
    names
        .iter()
        .map(|name| {
            app.channel(name)
                .map(|c| c.name.clone())
                .map_err(Failure::from)
        })
        .collect()
}
