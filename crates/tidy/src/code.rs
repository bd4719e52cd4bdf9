//! The constants the code declares, found by reading the sources (a constant may be
//! private, so no test could import it), and their values where they are arithmetic on
//! numbers, durations and other constants.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

use regex::Regex;

use crate::value::Value;

/// One `const` or `static` item.
#[derive(Debug, Clone)]
pub struct Constant {
    /// Where it is declared, relative to the repository root.
    pub file: PathBuf,
    /// Its module path: the crate without `airlock-` (`app`), then the modules.
    pub module: Vec<String>,
    /// Its name (`DUE_CANDIDATES`).
    pub name: String,
    /// The expression after `=`.
    pub expr: String,
}

/// Every constant of `crates/*/src`.
#[derive(Debug, Default)]
pub struct Constants {
    items: Vec<Constant>,
}

impl Constants {
    /// Reads every Rust file under `root/crates/*/src`.
    pub fn read(root: &Path) -> std::io::Result<Constants> {
        let mut constants = Constants::default();
        let mut crates: Vec<PathBuf> = fs::read_dir(root.join("crates"))?
            .filter_map(|entry| entry.ok().map(|e| e.path()))
            .filter(|path| path.join("src").is_dir())
            .collect();
        crates.sort();
        for dir in crates {
            let krate = dir
                .file_name()
                .and_then(|n| n.to_str())
                .unwrap_or_default()
                .replace('-', "_");
            let mut files = Vec::new();
            rust_files(&dir.join("src"), &mut files)?;
            for file in files {
                let source = fs::read_to_string(&file)?;
                let relative = file.strip_prefix(dir.join("src")).unwrap_or(&file);
                let module = module_path(&krate, relative);
                let file = file.strip_prefix(root).unwrap_or(&file).to_path_buf();
                constants.add(&file, &module, &source);
            }
        }
        Ok(constants)
    }

    /// Adds the constants declared in `source` (the file `file`, module `module`), but
    /// not in its `#[cfg(test)] mod tests`.
    pub fn add(&mut self, file: &Path, module: &[String], source: &str) {
        static ITEM: LazyLock<Regex> = LazyLock::new(|| {
            Regex::new(
                r"(?m)^[ \t]*(?:pub(?:\([^)]*\))?[ \t]+)?(?:const|static)[ \t]+([A-Z][A-Z0-9_]*)[ \t]*:[^=;]*=([^;]*);",
            )
            .expect("a valid pattern")
        });
        // A file's unit tests come last; their fixtures are not the code's constants.
        let source = source
            .split("\n#[cfg(test)]\nmod tests")
            .next()
            .unwrap_or(source);
        for found in ITEM.captures_iter(source) {
            self.items.push(Constant {
                file: file.to_path_buf(),
                module: module.to_vec(),
                name: found[1].to_owned(),
                expr: found[2].trim().to_owned(),
            });
        }
    }

    /// The constants a path names: `airlock_app::publish::DUE_CANDIDATES`,
    /// `app::publish::DUE_CANDIDATES` or, without its crate, `mastodon::KEY_KEPT_FOR`.
    /// A constant in a submodule of the named module counts too, so that splitting a
    /// module into files does not break what the docs name.
    pub fn resolve(&self, path: &str) -> Vec<&Constant> {
        let mut segments: Vec<String> = path.split("::").map(str::to_owned).collect();
        let Some(name) = segments.pop() else {
            return Vec::new();
        };
        if let Some(first) = segments.first_mut()
            && let Some(krate) = first.strip_prefix("airlock_")
        {
            *first = krate.to_owned();
        }
        self.items
            .iter()
            .filter(|c| c.name == name && contains_run(&c.module, &segments))
            .collect()
    }

    /// The value of a constant, when its expression is arithmetic on numbers,
    /// durations and other constants of its crate, or a number in a string.
    pub fn value(&self, constant: &Constant) -> Option<Value> {
        // A number kept as text (`DEFAULT_VERSION: &str = "202609"`).
        if let Some(text) = constant
            .expr
            .strip_prefix('"')
            .and_then(|e| e.strip_suffix('"'))
        {
            return text.parse().ok().map(Value::Count);
        }
        let value = evaluate(&constant.expr, &|name| {
            let mut found = self
                .items
                .iter()
                .filter(|c| c.name == name && c.module.first() == constant.module.first());
            let first = found.next()?;
            // Another constant of the same name elsewhere in the crate: prefer the one
            // in the same file, as Rust's name lookup would.
            let same_file = self
                .items
                .iter()
                .find(|c| c.name == name && c.file == constant.file)
                .unwrap_or(first);
            (same_file.name != constant.name).then_some(same_file)
        });
        value.map(|v| with_unit_of_name(&constant.name, v))
    }
}

/// Whether `run` occurs in `module` where a path may start: at the crate when `run`
/// names one, else at any module below it.
fn contains_run(module: &[String], run: &[String]) -> bool {
    if run.is_empty() {
        return true;
    }
    (0..module.len()).any(|start| module[start..].starts_with(run))
}

fn rust_files(dir: &Path, into: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_files(&path, into)?;
        } else if path.extension().is_some_and(|e| e == "rs") {
            into.push(path);
        }
    }
    Ok(())
}

/// `app` + `publish/path.rs` → `app::publish::path` (`lib.rs`, `main.rs` and `mod.rs`
/// are their directory's module).
fn module_path(krate: &str, relative: &Path) -> Vec<String> {
    let mut module = vec![krate.to_owned()];
    let components: Vec<&str> = relative
        .iter()
        .filter_map(|c| c.to_str())
        .map(|c| c.strip_suffix(".rs").unwrap_or(c))
        .collect();
    for (i, component) in components.iter().enumerate() {
        let last = i + 1 == components.len();
        if last && matches!(*component, "lib" | "main" | "mod") {
            continue;
        }
        module.push((*component).to_owned());
    }
    module
}

/// An integer constant whose name says its unit (`LOGIN_COOKIE_SECONDS`) is a duration.
fn with_unit_of_name(name: &str, value: Value) -> Value {
    let Value::Count(n) = value else {
        return value;
    };
    let per_unit = [
        ("_MS", 0.001),
        ("_MILLIS", 0.001),
        ("_SECS", 1.0),
        ("_SECONDS", 1.0),
        ("_MINUTES", 60.0),
        ("_HOURS", 3600.0),
        ("_DAYS", 86_400.0),
    ];
    per_unit
        .iter()
        .find(|(suffix, _)| name.ends_with(suffix))
        .map_or(value, |(_, seconds)| Value::Seconds(n * seconds))
}

/// Evaluates `expr`: numeric literals (`10_000`, `366.0`, `1e9`, with type suffixes),
/// `+ - * /`, parentheses, `as` casts, duration constructors (`Duration::minutes(5)`,
/// `StdDuration::from_secs(10)`) and other constants, looked up with `lookup`.
pub fn evaluate<'a>(expr: &str, lookup: &dyn Fn(&str) -> Option<&'a Constant>) -> Option<Value> {
    let tokens = tokenize(expr)?;
    let mut parser = Parser {
        tokens,
        at: 0,
        lookup,
        depth: 0,
    };
    let value = parser.sum()?;
    (parser.at == parser.tokens.len()).then_some(value)
}

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Number(f64),
    Path(String),
    Op(char),
}

fn tokenize(expr: &str) -> Option<Vec<Token>> {
    static TOKEN: LazyLock<Regex> = LazyLock::new(|| {
        Regex::new(
            r"\s*(?:(\d[\d_]*(?:\.\d[\d_]*)?(?:e\d+)?)(?:u8|u16|u32|u64|u128|usize|i8|i16|i32|i64|i128|isize|f32|f64)?|([A-Za-z_][A-Za-z0-9_]*(?:::[A-Za-z_][A-Za-z0-9_]*)*)|([-+*/()]))",
        )
        .expect("a valid pattern")
    });
    let token = &*TOKEN;
    let mut tokens = Vec::new();
    let mut at = 0;
    let expr = expr.trim();
    while at < expr.len() {
        let found = token.captures_at(expr, at)?;
        let whole = found.get(0)?;
        if whole.start() != at {
            return None;
        }
        at = whole.end();
        if let Some(number) = found.get(1) {
            tokens.push(Token::Number(
                number.as_str().replace('_', "").parse().ok()?,
            ));
        } else if let Some(path) = found.get(2) {
            tokens.push(Token::Path(path.as_str().to_owned()));
        } else if let Some(op) = found.get(3) {
            tokens.push(Token::Op(op.as_str().chars().next()?));
        }
        // Trailing whitespace.
        while expr[at..].starts_with(char::is_whitespace) {
            at += expr[at..].chars().next()?.len_utf8();
        }
    }
    Some(tokens)
}

struct Parser<'a, 'l> {
    tokens: Vec<Token>,
    at: usize,
    lookup: &'l dyn Fn(&str) -> Option<&'a Constant>,
    depth: usize,
}

impl Parser<'_, '_> {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.at)
    }

    fn eat(&mut self, op: char) -> bool {
        if self.peek() == Some(&Token::Op(op)) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn sum(&mut self) -> Option<Value> {
        let mut value = self.product()?;
        loop {
            if self.eat('+') {
                value = combine(value, self.product()?, '+')?;
            } else if self.eat('-') {
                value = combine(value, self.product()?, '-')?;
            } else {
                return Some(value);
            }
        }
    }

    fn product(&mut self) -> Option<Value> {
        let mut value = self.cast()?;
        loop {
            if self.eat('*') {
                value = combine(value, self.cast()?, '*')?;
            } else if self.eat('/') {
                value = combine(value, self.cast()?, '/')?;
            } else {
                return Some(value);
            }
        }
    }

    /// `atom as TYPE` casts change nothing here.
    fn cast(&mut self) -> Option<Value> {
        let value = self.atom()?;
        while self.peek() == Some(&Token::Path("as".into())) {
            self.at += 2;
        }
        Some(value)
    }

    fn atom(&mut self) -> Option<Value> {
        match self.peek()?.clone() {
            Token::Number(n) => {
                self.at += 1;
                Some(Value::Count(n))
            }
            Token::Op('(') => {
                self.at += 1;
                let value = self.sum()?;
                self.eat(')').then_some(value)
            }
            Token::Op('-') => {
                self.at += 1;
                combine(Value::Count(-1.0), self.atom()?, '*')
            }
            Token::Path(path) => {
                self.at += 1;
                let last = path.rsplit("::").next().unwrap_or(&path).to_owned();
                if self.eat('(') {
                    let argument = self.sum()?;
                    if !self.eat(')') {
                        return None;
                    }
                    let Value::Count(n) = argument else {
                        return None;
                    };
                    let seconds = match last.as_str() {
                        "from_millis" | "milliseconds" => 0.001,
                        "from_secs" | "seconds" => 1.0,
                        "from_mins" | "minutes" => 60.0,
                        "from_hours" | "hours" => 3600.0,
                        "days" => 86_400.0,
                        "weeks" => 7.0 * 86_400.0,
                        _ => return None,
                    };
                    Some(Value::Seconds(n * seconds))
                } else {
                    // Another constant; bounded, so that a cycle cannot recurse forever.
                    self.depth += 1;
                    if self.depth > 16 {
                        return None;
                    }
                    let constant = (self.lookup)(&last)?;
                    let tokens = tokenize(&constant.expr)?;
                    let mut inner = Parser {
                        tokens,
                        at: 0,
                        lookup: self.lookup,
                        depth: self.depth,
                    };
                    let value = inner.sum()?;
                    (inner.at == inner.tokens.len())
                        .then(|| with_unit_of_name(&constant.name, value))
                }
            }
            Token::Op(_) => None,
        }
    }
}

fn combine(a: Value, b: Value, op: char) -> Option<Value> {
    use Value::{Count, Seconds};
    Some(match (a, b, op) {
        (Count(x), Count(y), '+') => Count(x + y),
        (Count(x), Count(y), '-') => Count(x - y),
        (Count(x), Count(y), '*') => Count(x * y),
        (Count(x), Count(y), '/') => Count(x / y),
        (Seconds(x), Seconds(y), '+') => Seconds(x + y),
        (Seconds(x), Seconds(y), '-') => Seconds(x - y),
        (Seconds(x), Count(y), '*') | (Count(y), Seconds(x), '*') => Seconds(x * y),
        (Seconds(x), Count(y), '/') => Seconds(x / y),
        (Seconds(x), Seconds(y), '/') => Count(x / y),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn constants(source: &str, module: &[&str]) -> Constants {
        let mut constants = Constants::default();
        let module: Vec<String> = module.iter().map(|m| (*m).to_owned()).collect();
        constants.add(Path::new("crates/x/src/lib.rs"), &module, source);
        constants
    }

    fn value_of(constants: &Constants, path: &str) -> Option<Value> {
        let found = constants.resolve(path);
        assert_eq!(found.len(), 1, "{path}: {found:?}");
        constants.value(found[0])
    }

    #[test]
    fn constants_evaluate_with_their_units() {
        let constants = constants(
            "pub const MAX_TEXT_CHARS: usize = 100_000;\n\
             pub const MAX_TEXT_FILE_BYTES: u64 = (MAX_TEXT_CHARS * 4) as u64;\n\
             pub(crate) const LEASE_SLACK: Duration = Duration::milliseconds(500);\n\
             const STALE: std::time::Duration = std::time::Duration::from_secs(24 * 3600);\n\
             const LOGIN_COOKIE_SECONDS: u64 = 3600;\n\
             const CAP_SECS: f64 = 366.0 * 86_400.0;\n\
             const NAME: &str = \"x\";\n",
            &["core", "limits"],
        );
        let cases = [
            (
                "airlock_core::limits::MAX_TEXT_CHARS",
                Value::Count(100_000.0),
            ),
            ("core::limits::MAX_TEXT_FILE_BYTES", Value::Count(400_000.0)),
            ("limits::LEASE_SLACK", Value::Seconds(0.5)),
            ("core::STALE", Value::Seconds(86_400.0)),
            ("core::LOGIN_COOKIE_SECONDS", Value::Seconds(3600.0)),
            ("core::CAP_SECS", Value::Seconds(366.0 * 86_400.0)),
        ];
        for (path, expected) in cases {
            let value = value_of(&constants, path).unwrap_or_else(|| panic!("{path}"));
            assert!(value.same(expected), "{path}: {value}");
        }
        assert_eq!(value_of(&constants, "core::NAME"), None);
        assert!(constants.resolve("app::limits::MAX_TEXT_CHARS").is_empty());
        assert!(constants.resolve("core::quota::MAX_TEXT_CHARS").is_empty());
    }

    #[test]
    fn a_module_split_into_files_still_holds_its_constants() {
        let constants = constants(
            "const DUE_CANDIDATES: u32 = 4;",
            &["app", "publish", "path"],
        );
        assert_eq!(
            constants
                .resolve("airlock_app::publish::DUE_CANDIDATES")
                .len(),
            1
        );
        assert_eq!(constants.resolve("publish::DUE_CANDIDATES").len(), 1);
        assert!(constants.resolve("app::DUE_CANDIDATES").len() == 1);
        assert!(constants.resolve("app::review::DUE_CANDIDATES").is_empty());
    }

    #[test]
    fn unit_test_fixtures_are_not_constants() {
        let constants = constants(
            "const A: u32 = 1;\n#[cfg(test)]\nmod tests {\n    const B: u32 = 2;\n}\n",
            &["app"],
        );
        assert_eq!(constants.resolve("app::A").len(), 1);
        assert!(constants.resolve("app::B").is_empty());
    }

    #[test]
    fn module_paths_follow_the_files() {
        let path = |p: &str| module_path("app", Path::new(p)).join("::");
        assert_eq!(path("lib.rs"), "app");
        assert_eq!(path("publish.rs"), "app::publish");
        assert_eq!(path("publish/mod.rs"), "app::publish");
        assert_eq!(path("publish/path.rs"), "app::publish::path");
    }
}
