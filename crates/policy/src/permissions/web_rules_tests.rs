use super::*;
use crate::shell::Shell;

fn fetch(host: &str) -> Access {
    Access::Fetch {
        url: format!("https://{host}/"),
        host: host.to_owned(),
    }
}

fn decide_in(
    mode: Mode,
    harness: Harness,
    access: &Access,
    allow: &[&str],
    deny: &[&str],
) -> Decision {
    let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
    let rules = Rules::from_strings(&s(allow), &s(deny)).unwrap();
    decide(
        &Call {
            tool: "web_fetch",
            access,
            mode,
            harness,
            force_ask: false,
            roots: &[],
            shell: Shell::Bash,
        },
        &rules,
    )
}

#[test]
fn domain_rules() {
    let allow = [
        "web_fetch(domain:docs.rs)",
        "web_fetch(domain:*.python.org)",
    ];
    for mode in [Mode::Plan, Mode::Ask, Mode::Auto] {
        assert_eq!(
            decide_in(mode, Harness::Code, &fetch("docs.rs"), &allow, &[]),
            Decision::Allow
        );
        assert_eq!(
            decide_in(mode, Harness::Code, &fetch("docs.python.org"), &allow, &[]),
            Decision::Allow
        );
        assert_eq!(
            decide_in(mode, Harness::Code, &fetch("python.org"), &allow, &[]),
            Decision::Ask
        );
        assert_eq!(
            decide_in(mode, Harness::Code, &fetch("evilpython.org"), &allow, &[]),
            Decision::Ask
        );
        assert_eq!(
            decide_in(
                mode,
                Harness::Code,
                &fetch("docs.rs.evil.example"),
                &allow,
                &[]
            ),
            Decision::Ask
        );
    }
    assert_eq!(
        decide_in(Mode::Full, Harness::Code, &fetch("x.example"), &[], &[]),
        Decision::Allow
    );
    assert!(matches!(
        decide_in(
            Mode::Full,
            Harness::Code,
            &fetch("docs.rs"),
            &[],
            &["web_fetch(domain:docs.rs)"]
        ),
        Decision::Deny(_)
    ));
    assert!(matches!(
        decide_in(
            Mode::Auto,
            Harness::Unattended,
            &fetch("x.example"),
            &[],
            &[]
        ),
        Decision::Deny(_)
    ));
    assert!(Rule::parse("web_fetch(docs.rs)").is_err());
    assert!(Rule::parse("web_fetch(domain:)").is_err());
    assert_eq!(
        always_rule(
            "web_fetch",
            &fetch("docs.rs"),
            &[],
            Shell::Bash,
            OptionKind::AllowAlways
        )
        .as_deref(),
        Some("web_fetch(domain:docs.rs)")
    );
}
