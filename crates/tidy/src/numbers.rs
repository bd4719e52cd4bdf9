//! Docs and code agree on every number a doc states.
//!
//! `docs/numbers.toml` lists, per document, the phrases that state a number (`says`,
//! as the prose has it; line breaks do not matter), each as one of:
//!
//! - `own`: airlock decides it. It names the `constant` that holds it
//!   (`airlock_app::publish::DUE_CANDIDATES`), or, while the value is still a literal,
//!   the `code` (a file or directory) that `has` it; the number the phrase states must
//!   be the constant's value, or one the `has` text writes.
//! - `external`: a fact about something outside airlock (a platform's documented limit,
//!   a protocol), with `of` saying whose; where airlock's code holds it too, `constant`
//!   or `code` and `has` check that as for `own`.
//! - `example`: an illustration (a sample value, worked arithmetic).
//!
//! The check fails when a listed phrase is no longer in its document, when an own number
//! differs from the code, when a named constant does not exist, and when a document
//! states a quantity (see [`Prose::quantities`]) that no phrase covers. A phrase with
//! several numbers takes `number`, the part of it to compare (`"30 min"`).

use std::collections::BTreeMap;
use std::fs;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;
use serde::Deserialize;

use crate::code::Constants;
use crate::prose::Prose;
use crate::value::{self, Value};

/// The registry, relative to the repository root.
pub const REGISTRY: &str = "docs/numbers.toml";

/// What one document states.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stated {
    /// Numbers airlock decides.
    #[serde(default)]
    pub own: Vec<Number>,
    /// Facts about something outside airlock.
    #[serde(default)]
    pub external: Vec<Number>,
    /// Illustrations.
    #[serde(default)]
    pub example: Vec<String>,
}

/// One phrase that states a number, and what holds that number.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Number {
    /// The phrase, as the document has it.
    pub says: String,
    /// The part of `says` to read the number from, when it has several.
    pub number: Option<String>,
    /// The constant that holds it.
    pub constant: Option<String>,
    /// A file or directory (relative to the root) whose text has `has`.
    pub code: Option<String>,
    /// The code's text that holds the number (`unwrap_or(1000)`, `"15m"`).
    pub has: Option<String>,
    /// Whose fact it is (`external` only): `Bluesky`, `Meta's Graph API`, `HTTP`.
    pub of: Option<String>,
}

/// The documents the check reads: `docs/*.md`, `README.md` and `ARCHITECTURE.md`.
pub fn documents(root: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut docs: Vec<PathBuf> = fs::read_dir(root.join("docs"))?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|e| e == "md"))
        .filter_map(|path| path.strip_prefix(root).ok().map(Path::to_path_buf))
        .collect();
    docs.sort();
    docs.push(PathBuf::from("README.md"));
    docs.push(PathBuf::from("ARCHITECTURE.md"));
    Ok(docs)
}

/// Checks the repository at `root`; returns the problems, one line each.
pub fn check(root: &Path) -> Vec<String> {
    let read = || -> std::io::Result<_> {
        let mut docs = Vec::new();
        for path in documents(root)? {
            let text = fs::read_to_string(root.join(&path))?;
            docs.push((path.to_string_lossy().into_owned(), text));
        }
        let registry = fs::read_to_string(root.join(REGISTRY))?;
        Ok((docs, registry, Constants::read(root)?, Sources::read(root)?))
    };
    match read() {
        Ok((docs, registry, constants, sources)) => {
            check_with(&docs, &registry, &constants, &|path, has| {
                sources.has(path, has)
            })
        }
        Err(e) => vec![format!("cannot read the docs, {REGISTRY} or the code: {e}")],
    }
}

/// [`check`] on given documents (path, Markdown), registry text and constants; `code`
/// answers whether a file or directory has a text.
pub fn check_with(
    docs: &[(String, String)],
    registry: &str,
    constants: &Constants,
    code: &dyn Fn(&str, &str) -> Result<bool, String>,
) -> Vec<String> {
    let registry: BTreeMap<String, Stated> = match toml::from_str(registry) {
        Ok(registry) => registry,
        Err(e) => return vec![format!("{REGISTRY}: {e}")],
    };
    let mut problems = Vec::new();
    for listed in registry.keys() {
        if !docs.iter().any(|(path, _)| path == listed) {
            problems.push(format!(
                "{REGISTRY}: lists [\"{listed}\"], which is not a document the check reads"
            ));
        }
    }
    let empty = Stated::default();
    for (path, markdown) in docs {
        let prose = Prose::parse(markdown);
        let stated = registry.get(path).unwrap_or(&empty);
        let mut covered: Vec<Range<usize>> = Vec::new();
        let mut locate = |says: &str, problems: &mut Vec<String>| -> Option<usize> {
            let found = prose.find(says);
            if found.is_empty() {
                problems.push(format!(
                    "{REGISTRY}: [\"{path}\"] lists \"{says}\", which {path} no longer says: update the entry with the doc"
                ));
                return None;
            }
            let first = found[0].start;
            covered.extend(found);
            Some(first)
        };
        for number in &stated.own {
            let Some(at) = locate(&number.says, &mut problems) else {
                continue;
            };
            let whence = format!("{path}:{}", prose.line_at(at));
            if number.constant.is_none() && number.code.is_none() {
                problems.push(format!(
                    "{REGISTRY}: \"{}\" ({whence}) is airlock's own: name its `constant`, or the `code` that `has` it",
                    number.says
                ));
            }
            agree(number, &whence, constants, code, &mut problems);
        }
        for number in &stated.external {
            let Some(at) = locate(&number.says, &mut problems) else {
                continue;
            };
            let whence = format!("{path}:{}", prose.line_at(at));
            if number.of.as_deref().is_none_or(|of| of.trim().is_empty()) {
                problems.push(format!(
                    "{REGISTRY}: \"{}\" ({whence}) is external: say whose fact it is (`of`)",
                    number.says
                ));
            }
            agree(number, &whence, constants, code, &mut problems);
        }
        for says in &stated.example {
            locate(says, &mut problems);
        }
        for quantity in prose.quantities() {
            if covered.iter().any(|r| r.contains(&quantity.at.start)) {
                continue;
            }
            let context = context(&prose.text, &quantity.at);
            problems.push(format!(
                "{path}:{}: states {} (\"{context}\"), which {REGISTRY} does not list: if airlock decides it, name the constant (own); if a platform does, say which (external); or list it as an example",
                prose.line_at(quantity.at.start),
                quantity.number,
            ));
        }
        for (at, name) in prose.constant_names() {
            if constants.resolve(&name).is_empty() {
                problems.push(format!(
                    "{path}:{}: names `{name}`, which the code does not declare",
                    prose.line_at(at)
                ));
            }
        }
    }
    problems
}

/// The number a listed phrase states equals the code's.
fn agree(
    number: &Number,
    whence: &str,
    constants: &Constants,
    code: &dyn Fn(&str, &str) -> Result<bool, String>,
    problems: &mut Vec<String>,
) {
    let part = number.number.as_deref().unwrap_or(&number.says);
    if !number.says.contains(part) {
        problems.push(format!(
            "{REGISTRY}: \"{}\" ({whence}): `number` \"{part}\" is not part of it",
            number.says
        ));
        return;
    }
    let stated = value::parse(part);
    if let Some(name) = &number.constant {
        let found = constants.resolve(name);
        let Some(first) = found.first() else {
            problems.push(format!(
                "{REGISTRY}: \"{}\" ({whence}) names `{name}`, which the code does not declare",
                number.says
            ));
            return;
        };
        let Some(actual) = constants.value(first) else {
            problems.push(format!(
                "{REGISTRY}: `{name}` = `{}` ({}) is not a value the check can compute",
                first.expr,
                first.file.display()
            ));
            return;
        };
        if found
            .iter()
            .any(|c| constants.value(c).is_none_or(|v| !v.same(actual)))
        {
            problems.push(format!(
                "{REGISTRY}: `{name}` names several constants with different values: name it by its module"
            ));
        }
        match stated {
            Some(stated) if stated.same(actual) => {}
            Some(stated) => problems.push(format!(
                "{whence}: says \"{}\" ({stated}), but `{name}` is {actual} ({}): fix the doc and {REGISTRY}",
                number.says,
                first.file.display()
            )),
            None => problems.push(format!(
                "{REGISTRY}: \"{part}\" ({whence}) states no number the check can read"
            )),
        }
    }
    match (&number.code, &number.has) {
        (Some(path), Some(has)) => match code(path, has) {
            Ok(true) => {
                let written = literal_values(has);
                // The number as the phrase writes it, before its unit: code often writes
                // a duration in its own unit (`-mtime +14` days).
                let raw = value::numbers(part).first().map(|(n, _)| *n);
                match stated {
                    _ if written.is_empty() => problems.push(format!(
                        "{REGISTRY}: \"{}\" ({whence}): `has` writes no number: quote the code that holds it",
                        number.says
                    )),
                    None => problems.push(format!(
                        "{REGISTRY}: \"{part}\" ({whence}) states no number the check can read"
                    )),
                    Some(stated)
                        if !written.iter().any(|v| same_as_written(stated, *v))
                            && !raw.is_some_and(|raw| {
                                written.iter().any(|v| v.same(Value::Count(raw)))
                            }) =>
                    {
                        problems.push(format!(
                            "{whence}: says \"{}\" ({stated}), but the code has `{has}`: fix the doc and {REGISTRY}",
                            number.says
                        ));
                    }
                    Some(_) => {}
                }
            }
            Ok(false) => problems.push(format!(
                "{REGISTRY}: \"{}\" ({whence}): {path} no longer has `{has}`: the code changed; fix the doc and {REGISTRY}",
                number.says
            )),
            Err(e) => problems.push(format!("{REGISTRY}: \"{}\": {e}", number.says)),
        },
        (None, None) => {}
        _ => problems.push(format!(
            "{REGISTRY}: \"{}\" ({whence}): `code` and `has` go together",
            number.says
        )),
    }
}

/// Code writes durations as plain numbers too (`> 600` seconds in an alert rule).
fn same_as_written(stated: Value, written: Value) -> bool {
    match (stated, written) {
        (Value::Seconds(s), Value::Count(n)) => Value::Count(s).same(Value::Count(n)),
        _ => stated.same(written),
    }
}

/// The numbers a piece of code writes: literals (`1000`), with the unit after them
/// (`"15m"`, `20 MB`), and duration constructors (`Duration::minutes(15)`).
fn literal_values(code: &str) -> Vec<Value> {
    let mut values = Vec::new();
    static CALLS: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"(?:from_millis|milliseconds|from_secs|seconds|from_mins|minutes|from_hours|hours|days)\([^()]*\)",
        )
        .expect("a valid pattern")
    });
    for found in CALLS.find_iter(code) {
        if let Some(value) = crate::code::evaluate(found.as_str(), &|_| None) {
            values.push(value);
        }
    }
    for (number, unit) in value::numbers(code) {
        values.push(value::scaled(number, unit.as_deref()));
    }
    values
}

/// The text files `code` entries may name: everything under `crates/` (but build
/// output), `packaging/` and `scripts/`, and the files at the root; read once.
struct Sources {
    files: Vec<(String, String)>,
}

impl Sources {
    fn read(root: &Path) -> std::io::Result<Sources> {
        let mut files = Vec::new();
        let mut stack: Vec<PathBuf> = ["crates", "packaging", "scripts"]
            .iter()
            .map(|dir| root.join(dir))
            .collect();
        for entry in fs::read_dir(root)? {
            let path = entry?.path();
            if path.is_file() {
                stack.push(path);
            }
        }
        while let Some(path) = stack.pop() {
            let name = path
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default();
            if path.is_dir() {
                if name == "target" || name == "node_modules" || name.starts_with('.') {
                    continue;
                }
                for entry in fs::read_dir(&path)? {
                    stack.push(entry?.path());
                }
            } else if let Ok(text) = fs::read_to_string(&path) {
                let relative = path.strip_prefix(root).unwrap_or(&path);
                files.push((relative.to_string_lossy().into_owned(), text));
            }
        }
        Ok(Sources { files })
    }

    /// Whether the file or directory `path` has `has` in its text.
    fn has(&self, path: &str, has: &str) -> Result<bool, String> {
        let path = path.trim_end_matches('/');
        let under = |file: &str| {
            file == path
                || file
                    .strip_prefix(path)
                    .is_some_and(|rest| rest.starts_with('/'))
        };
        let mut any = false;
        for (file, text) in &self.files {
            if under(file) {
                any = true;
                if text.contains(has) {
                    return Ok(true);
                }
            }
        }
        if any {
            Ok(false)
        } else {
            Err(format!(
                "{path} is not a file or directory of the repository"
            ))
        }
    }
}

/// The clause around a position, for a message.
fn context(text: &str, at: &Range<usize>) -> String {
    let start = text[..at.start]
        .char_indices()
        .rev()
        .take(40)
        .last()
        .map_or(at.start, |(i, _)| i);
    let end = text[at.end..]
        .char_indices()
        .take(40)
        .last()
        .map_or(at.end, |(i, c)| at.end + i + c.len_utf8());
    text[start..end].trim().to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = "# Guarded path\n\n- **The dispatcher** reads up to 4 due posts\n  \
        (`airlock_app::publish::DUE_CANDIDATES`); Bluesky counts 300 graphemes.\n";

    fn constants() -> Constants {
        let mut constants = Constants::default();
        constants.add(
            Path::new("crates/app/src/publish.rs"),
            &["app".to_owned(), "publish".to_owned()],
            "const DUE_CANDIDATES: u32 = 4;\npub const LEASE_SLACK: Duration = Duration::milliseconds(500);",
        );
        constants
    }

    fn run(doc: &str, registry: &str) -> Vec<String> {
        let docs = vec![("docs/guarded-path.md".to_owned(), doc.to_owned())];
        let code = |_: &str, has: &str| Ok(has.contains("15m"));
        check_with(&docs, registry, &constants(), &code)
    }

    const REGISTRY_OK: &str = r#"
        ["docs/guarded-path.md"]
        own = [{ says = "reads up to 4 due posts", constant = "airlock_app::publish::DUE_CANDIDATES" }]
        external = [{ says = "300 graphemes", of = "Bluesky" }]
    "#;

    #[test]
    fn a_doc_that_agrees_with_the_code_passes() {
        assert_eq!(run(DOC, REGISTRY_OK), Vec::<String>::new());
    }

    #[test]
    fn a_doc_that_drifted_from_its_constant_fails() {
        let doc = DOC.replace("up to 4", "up to 16");
        let registry = REGISTRY_OK.replace("up to 4", "up to 16");
        let problems = run(&doc, &registry);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].contains("says \"reads up to 16 due posts\" (16), but `airlock_app::publish::DUE_CANDIDATES` is 4"), "{problems:?}");
    }

    #[test]
    fn a_doc_changed_without_its_entry_fails_twice() {
        let problems = run(&DOC.replace("up to 4", "up to 16"), REGISTRY_OK);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("no longer says"), "{problems:?}");
        assert!(
            problems[1].contains("docs/guarded-path.md:3: states 16"),
            "{problems:?}"
        );
    }

    #[test]
    fn an_unlisted_number_and_a_missing_constant_fail() {
        let doc =
            format!("{DOC}\nSessions last 12 hours (`airlock_app::sessions::SESSION_HOURS`).\n");
        let problems = run(&doc, REGISTRY_OK);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains(":6: states 12"), "{problems:?}");
        assert!(
            problems[1].contains(
                ":6: names `airlock_app::sessions::SESSION_HOURS`, which the code does not declare"
            ),
            "{problems:?}"
        );
    }

    #[test]
    fn code_literals_and_units_are_compared() {
        let doc = "Leases last `15m` by default, plus 0.5 s of slack; 60 s when absent.\n";
        let registry = r#"
            ["docs/guarded-path.md"]
            own = [
                { says = "`15m` by default", code = "crates/cli/src/config", has = 'stale_after = "15m"' },
                { says = "0.5 s of slack", constant = "publish::LEASE_SLACK" },
                { says = "60 s when absent", code = "crates/platforms", has = "Duration::minutes(1)" },
            ]
        "#;
        let problems = run(doc, registry);
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(
            problems[0].contains("no longer has `Duration::minutes(1)`"),
            "{problems:?}"
        );
        let wrong = run(
            &doc.replace("0.5 s", "1 s"),
            &registry.replace("0.5 s", "1 s"),
        );
        assert!(
            wrong
                .iter()
                .any(|p| p.contains("but `publish::LEASE_SLACK` is 0.5 s")),
            "{wrong:?}"
        );
    }

    #[test]
    fn own_needs_its_code_and_external_its_owner() {
        let registry = r#"
            ["docs/guarded-path.md"]
            own = [{ says = "reads up to 4 due posts" }]
            external = [{ says = "300 graphemes" }]
        "#;
        let problems = run(DOC, registry);
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].contains("name its `constant`"), "{problems:?}");
        assert!(problems[1].contains("say whose fact it is"), "{problems:?}");
    }
}
