//! The files under `packaging/`, checked with the tools that consume them: the systemd
//! units with `systemd-analyze verify` (and its offline security score), the Prometheus
//! alert rules with `promtool check rules` and `promtool test rules`, and every metric
//! they use against a running `serve`; the container file and its configuration, as far
//! as this machine can check them without a container engine.
//!
//! `systemd-analyze` (Debian package `systemd`) and `promtool` (package `prometheus`)
//! are installed by `scripts/test.sh`; a missing one fails the test with that advice.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::operations::Serving;
use crate::support::*;

fn packaging() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../packaging")
}

fn read(rel: &str) -> String {
    std::fs::read_to_string(packaging().join(rel))
        .unwrap_or_else(|e| panic!("packaging/{rel}: {e}"))
}

/// A tool from PATH or its Debian location, or a failure saying how to get it.
fn tool(name: &str, package: &str) -> PathBuf {
    let candidates = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .chain([PathBuf::from("/usr/bin"), PathBuf::from("/bin")]);
    for dir in candidates {
        let path = dir.join(name);
        if path.is_file() {
            return path;
        }
    }
    panic!("{name} is missing: install the Debian package {package} (scripts/test.sh does)");
}

/// The units, as installed, except that they run the binary these tests built (verify
/// insists the ExecStart binary exists).
fn units_for_this_build() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for unit in [
        "airlock.service",
        "airlock-backup.service",
        "airlock-backup.timer",
    ] {
        let text = read(&format!("systemd/{unit}")).replace("/usr/local/bin/airlock", binary());
        std::fs::write(dir.path().join(unit), text).unwrap();
    }
    dir
}

#[test]
fn the_systemd_units_pass_systemd_analyze_verify() {
    let analyze = tool("systemd-analyze", "systemd");
    let dir = units_for_this_build();
    let output = Command::new(&analyze)
        .current_dir(dir.path())
        .args(["verify", "--man=no"])
        .args([
            "./airlock.service",
            "./airlock-backup.service",
            "./airlock-backup.timer",
        ])
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        output.status.success(),
        "systemd-analyze verify failed:\n{said}"
    );
    // verify only warns about unknown keys or bad values: any output is a finding.
    assert!(
        said.trim().is_empty(),
        "systemd-analyze verify found:\n{said}"
    );
}

#[test]
fn the_service_is_sandboxed() {
    let unit = read("systemd/airlock.service");
    for directive in [
        "User=airlock",
        "NoNewPrivileges=yes",
        "ProtectSystem=strict",
        "ProtectHome=yes",
        "PrivateTmp=yes",
        "ReadWritePaths=/var/lib/airlock",
        "RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6",
        "CapabilityBoundingSet=\n",
        "SystemCallFilter=@system-service",
        "UMask=0077",
        "KillSignal=SIGTERM",
        // A refusal (exit 2) is not retried in a loop; other failures only so often.
        "RestartPreventExitStatus=2",
        "StartLimitIntervalSec=",
        "StartLimitBurst=",
        // The configuration directory as the comments install it.
        "install -d -o root -g airlock -m 0750 /etc/airlock",
    ] {
        assert!(
            unit.contains(directive),
            "airlock.service lacks {directive:?}"
        );
    }
    let analyze = tool("systemd-analyze", "systemd");
    let dir = units_for_this_build();
    for (unit, threshold) in [("airlock.service", 20), ("airlock-backup.service", 10)] {
        // Exposure is scored 0 (safe) to 10 (exposed); the threshold is in tenths.
        let output = Command::new(&analyze)
            .current_dir(dir.path())
            .args([
                "security",
                "--offline=yes",
                &format!("--threshold={threshold}"),
            ])
            .arg(format!("./{unit}"))
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&output.stdout);
        let overall = said
            .lines()
            .find(|l| l.contains("Overall exposure level"))
            .unwrap_or_default();
        assert!(
            output.status.success(),
            "{unit} is exposed more than {}: {overall}",
            f64::from(threshold) / 10.0
        );
    }
    let timer = read("systemd/airlock-backup.timer");
    assert!(timer.contains("Unit=airlock-backup.service") && timer.contains("Persistent=true"));
    let backup = read("systemd/airlock-backup.service");
    assert!(
        backup.contains(" backup --to "),
        "the timer runs `airlock backup`"
    );
}

#[test]
fn the_alert_rules_pass_promtool_and_their_own_tests() {
    let promtool = tool("promtool", "prometheus");
    let dir = packaging().join("prometheus");
    for args in [
        vec!["check", "rules", "airlock-alerts.yml"],
        vec!["test", "rules", "airlock-alerts.test.yml"],
    ] {
        let output = Command::new(&promtool)
            .current_dir(&dir)
            .args(&args)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "promtool {}:\n{}{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let rules = read("prometheus/airlock-alerts.yml");
    for alert in [
        "AirlockPostNeedsReview",
        "AirlockChannelPaused",
        "AirlockNotificationsStuck",
        "AirlockDispatcherNotRunning",
        "AirlockVerificationFailed",
    ] {
        assert!(
            rules.contains(&format!("alert: {alert}")),
            "{alert} missing"
        );
    }
}

/// The `airlock_*` names an alert rule uses.
fn metric_names(rules: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    for line in rules
        .lines()
        .filter(|l| l.contains("expr:") || l.starts_with("          "))
    {
        let mut rest = line;
        while let Some(start) = rest.find("airlock_") {
            let name: String = rest[start..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            rest = &rest[start + name.len()..];
            names.insert(name);
        }
    }
    names
}

#[test]
fn every_metric_the_alert_rules_use_is_served() {
    let rules = read("prometheus/airlock-alerts.yml");
    let names = metric_names(&rules);
    assert!(names.len() >= 6, "{names:?}");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let ws = Workspace::new(&sandbox_config(&format!(
        "\n[server]\nlisten = \"127.0.0.1:{port}\"\n"
    )));
    ws.ok(&[
        "pause",
        "sandbox",
        "--reason",
        "so that airlock_paused has a series",
    ]);
    let serving = Serving::start(&ws, &format!("127.0.0.1:{port}"), &[]);
    let mut stream = std::net::TcpStream::connect(&serving.address).unwrap();
    use std::io::{Read, Write};
    write!(
        stream,
        "GET /metrics HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        serving.address
    )
    .unwrap();
    let mut metrics = String::new();
    stream.read_to_string(&mut metrics).unwrap();
    for name in &names {
        assert!(
            metrics.contains(&format!("\n{name} ")) || metrics.contains(&format!("\n{name}{{")),
            "the rules use {name}, which /metrics does not serve:\n{metrics}"
        );
    }
}

#[test]
fn the_container_file_builds_from_this_repository_and_runs_unprivileged() {
    let file = read("container/Dockerfile");
    let instructions: Vec<&str> = file
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .collect();
    let stages: Vec<&&str> = instructions
        .iter()
        .filter(|l| l.starts_with("FROM "))
        .collect();
    assert!(stages.len() >= 2, "multi-stage: {stages:?}");
    let runtime = file.rsplit("\nFROM ").next().unwrap();
    assert!(
        runtime.contains("\nUSER airlock") && !runtime.contains("\nUSER root"),
        "the runtime stage runs as airlock"
    );
    assert!(runtime.contains("VOLUME [\"/var/lib/airlock\"]"));
    assert!(
        runtime.contains("HEALTHCHECK") && runtime.contains("http://127.0.0.1:8080/healthz"),
        "a health check on /healthz"
    );
    assert!(
        runtime.contains("AIRLOCK_HEALTH_URL"),
        "the health check can follow another listen port"
    );
    assert!(
        runtime.contains("/var/lib/airlock/backups"),
        "the backup directory exists in the image"
    );
    assert!(runtime.contains("COPY --from=build"));
    // Every path it copies from the build context exists (Dockerfile paths are relative
    // to the repository root, the build context).
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    for line in instructions
        .iter()
        .filter(|l| l.starts_with("COPY ") && !l.contains("--from="))
    {
        let words: Vec<&str> = line
            .split_whitespace()
            .filter(|w| !w.starts_with("--"))
            .collect();
        for source in &words[1..words.len() - 1] {
            assert!(
                root.join(source).exists(),
                "COPY source {source} is missing"
            );
        }
    }
    let ignore = std::fs::read_to_string(root.join(".dockerignore")).unwrap();
    assert!(
        ignore.lines().any(|l| l == "target"),
        "target/ stays out of the context"
    );
}

#[test]
fn the_container_configuration_is_valid_for_this_binary() {
    let config = read("container/airlock.toml");
    assert!(
        config.contains("listen = \"0.0.0.0:8080\""),
        "the port the health check uses"
    );
    let dir = tempfile::tempdir().unwrap();
    let local = config.replace("/var/lib/airlock", dir.path().to_str().unwrap());
    let ws = Workspace { dir };
    std::fs::write(ws.config(), local).unwrap();
    let doctor = ws.run(&["doctor"]);
    assert_eq!(doctor.code, 0, "{}{}", doctor.stdout, doctor.stderr);
}

/// The release binary operators install stays lean (36 MB before, under 20 MB with
/// these settings; measured, not built here: a release build takes many minutes).
#[test]
fn the_release_profile_strips_symbols_and_optimizes_the_whole_program() {
    let manifest =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml"))
            .unwrap();
    let manifest: toml::Table = manifest.parse().unwrap();
    let release = &manifest["profile"]["release"];
    assert_eq!(release["strip"].as_str(), Some("symbols"));
    assert_eq!(release["lto"].as_str(), Some("fat"));
    assert_eq!(release["codegen-units"].as_integer(), Some(1));
    assert!(
        release.get("panic").is_none(),
        "panics unwind: serve reports a panicked task and stops the others cleanly"
    );
}
