//! Handoff packets (`model::handoff`) parsed from Markdown and flags: headings,
//! refusals with their line, paths kept inside the repository, limits.

use loopx::model::handoff::*;
use std::path::Path;

#[test]
fn markdown_sections_lists_and_variants() {
    let md = "# Handoff of the parser\n\nSome context first.\n\n## Work done:\nParsed the header.\n\n\
              ### APPROACHES TRIED\n- regex: too slow\n  on big files\n* nom\n\n## Next Steps\n1. write tests\n2) ship\n\n\
              ## Open questions\n- which encoding?\n\n## Files to read\n- `src/a.rs` the parser\n- docs/b.md\n";
    let p = parse_markdown("p.md", md).unwrap();
    assert_eq!(
        p.work_summary.as_deref(),
        Some("Some context first.\n\nParsed the header.")
    );
    assert_eq!(p.approaches_tried.len(), 2);
    assert_eq!(p.approaches_tried[0].approach, "regex");
    assert_eq!(
        p.approaches_tried[0].reason.as_deref(),
        Some("too slow on big files")
    );
    assert_eq!(p.approaches_tried[1].reason, None);
    assert_eq!(p.next_steps, ["write tests", "ship"]);
    assert_eq!(p.open_questions, ["which encoding?"]);
    assert_eq!(p.files, ["src/a.rs", "docs/b.md"]);
}

/// The digest `loopx handoff inspect --format digest` prints reads back.
#[test]
fn loopx_digest_headings_are_understood() {
    let md = "# Handoff Context\nSource: a | Status: current\n\n## Summary\nDid X.\n\n\
              ## What was tried\n- regex → failed: slow\n\n## Key decisions\n- keep nom: smaller\n\n\
              ## Files touched\n- src/a.rs (edited)\n\n## Open questions\n- why?\n";
    let p = parse_markdown("d.md", md).unwrap();
    let summary = p.work_summary.unwrap();
    assert!(summary.starts_with("Source: a"), "{summary}");
    assert!(
        summary.contains("Key decisions\n- keep nom: smaller"),
        "{summary}"
    );
    assert_eq!(p.approaches_tried[0].reason.as_deref(), Some("slow"));
    assert_eq!(p.files, ["src/a.rs"]);
    assert_eq!(p.open_questions, ["why?"]);
}

#[test]
fn unknown_heading_is_refused_with_its_line() {
    let err = parse_markdown("p.md", "## Summary\nx\n\n## Risks\n- y\n").unwrap_err();
    assert!(err.message.contains("p.md line 4"), "{}", err.message);
    assert!(err.message.contains("## Risks"), "{}", err.message);
    // A title is only skipped on the first line.
    assert!(parse_markdown("p.md", "## Summary\nx\n# Title\n").is_err());
    // A heading inside a code fence is text.
    let p = parse_markdown("p.md", "## Summary\n```\n# not a heading\n```\n").unwrap();
    assert!(p.work_summary.unwrap().contains("# not a heading"));
    assert!(parse_markdown("p.md", "# Title only\n\n").is_err());
}

#[test]
fn paths_stay_inside_the_repository() {
    let root = Path::new("/repo");
    assert_eq!(
        repo_path(Some(root), "src/./a/../b.rs").unwrap(),
        "src/b.rs"
    );
    assert_eq!(repo_path(Some(root), "/repo/src/b.rs").unwrap(), "src/b.rs");
    assert!(repo_path(Some(root), "/etc/passwd").is_err());
    assert!(repo_path(None, "/repo/x").is_err());
    assert!(repo_path(Some(root), "../x").is_err());
    assert!(repo_path(Some(root), "a/../../x").is_err());
    assert!(repo_path(Some(root), ".").is_err());
    assert!(repo_path(Some(root), ".git/config").is_err());
}

#[test]
fn flags_append_to_the_file_and_limits_hold() {
    let mut p = parse_markdown("p.md", "## Summary\nA\n## Next steps\n- one\n").unwrap();
    p.append(Packet {
        work_summary: Some("B".into()),
        next_steps: vec!["two".into()],
        ..Packet::default()
    });
    assert_eq!(p.work_summary.as_deref(), Some("A\n\nB"));
    assert_eq!(p.next_steps, ["one", "two"]);
    let many = Packet {
        next_steps: vec!["x".into(); MAX_ITEMS + 1],
        ..Packet::default()
    };
    assert!(many.check(None).is_err());
    let big = Packet {
        next_steps: vec!["x".repeat(10_000); 4],
        ..Packet::default()
    };
    assert!(big.check(None).unwrap_err().message.contains("bytes"));
}
