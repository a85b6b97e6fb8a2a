use super::*;
use crate::shell::Shell;

fn rules(allow: &[&str], deny: &[&str]) -> Rules {
    let s = |v: &[&str]| v.iter().map(|x| (*x).to_owned()).collect::<Vec<_>>();
    Rules::from_strings(&s(allow), &s(deny)).unwrap()
}

fn exec(c: &str) -> Access {
    Access::Execute { command: c.into() }
}

fn write(p: &str) -> Access {
    Access::Write {
        paths: vec![PathBuf::from(p)],
    }
}

fn read(p: &str) -> Access {
    Access::Read {
        paths: vec![PathBuf::from(p)],
    }
}

fn d(tool: &str, access: &Access, mode: Mode, rules: &Rules) -> Decision {
    let roots = vec![PathBuf::from("/ws")];
    decide(
        &Call {
            tool,
            access,
            mode,
            harness: Harness::Code,
            force_ask: false,
            roots: &roots,
            shell: Shell::Bash,
        },
        rules,
    )
}

#[test]
fn bash_prefix_and_exact_rules() {
    let r = rules(&["bash(cargo test:*)", "bash(git status)"], &["bash(rm:*)"]);
    assert_eq!(
        d("bash", &exec("cargo test --all"), Mode::Ask, &r),
        Decision::Allow
    );
    assert_eq!(
        d("bash", &exec("cargo testify"), Mode::Ask, &r),
        Decision::Ask
    );
    assert_eq!(
        d("bash", &exec("git  status"), Mode::Ask, &r),
        Decision::Allow
    );
    assert_eq!(
        d("bash", &exec("git status -s"), Mode::Ask, &r),
        Decision::Ask
    );
    assert_eq!(
        d("bash", &exec("cargo test && curl evil"), Mode::Ask, &r),
        Decision::Ask,
        "every part must be allowed"
    );
    assert!(
        matches!(
            d("bash", &exec("cargo test; rm -rf /"), Mode::Full, &r),
            Decision::Deny(_)
        ),
        "deny wins in full"
    );
    assert!(matches!(
        d("bash", &exec("echo hi | rm x"), Mode::Auto, &r),
        Decision::Deny(_)
    ));
}

#[test]
fn file_rules_and_workspace_boundaries() {
    let r = rules(&["edit(src/**)"], &["read(**/.env)"]);
    assert_eq!(
        d("edit", &write("/ws/src/a/b.rs"), Mode::Ask, &r),
        Decision::Allow
    );
    assert_eq!(
        d("write", &write("/ws/src/new.rs"), Mode::Ask, &r),
        Decision::Allow,
        "edit rules cover write"
    );
    assert_eq!(
        d("edit", &write("/ws/README.md"), Mode::Ask, &r),
        Decision::Ask
    );
    assert!(matches!(
        d("read", &read("/ws/app/.env"), Mode::Full, &r),
        Decision::Deny(_)
    ));
    assert!(
        matches!(
            d("grep", &read("/ws/.env"), Mode::Auto, &r),
            Decision::Deny(_)
        ),
        "read rules cover grep"
    );
    assert_eq!(
        d("read", &read("/ws/src/main.rs"), Mode::Ask, &r),
        Decision::Allow
    );
    assert_eq!(d("read", &read("/etc/hosts"), Mode::Ask, &r), Decision::Ask);
    // Outside the workspace `auto` asks as `ask` does (secrets such as ~/.ssh live there).
    assert_eq!(
        d("read", &read("/etc/hosts"), Mode::Auto, &r),
        Decision::Ask
    );
    assert_eq!(
        d("edit", &write("/ws/src/x.rs"), Mode::Auto, &rules(&[], &[])),
        Decision::Allow
    );
    assert_eq!(
        d(
            "edit",
            &write("/tmp/x"),
            Mode::Auto,
            &rules(&["edit(/tmp/**)"], &[])
        ),
        Decision::Ask,
        "outside always asks"
    );
    assert_eq!(
        d("edit", &write("/tmp/x"), Mode::Full, &rules(&[], &[])),
        Decision::Allow
    );
}

#[test]
fn modes() {
    let none = rules(&[], &[]);
    assert!(matches!(
        d("edit", &write("/ws/a"), Mode::Plan, &none),
        Decision::Deny(_)
    ));
    assert_eq!(d("bash", &exec("ls"), Mode::Plan, &none), Decision::Allow);
    assert_eq!(d("bash", &exec("make"), Mode::Ask, &none), Decision::Ask);
    assert_eq!(d("bash", &exec("make"), Mode::Auto, &none), Decision::Allow);
    assert_eq!(
        d("mcp__s__t", &Access::Mcp, Mode::Ask, &none),
        Decision::Ask
    );
    assert_eq!(
        d(
            "mcp__s__t",
            &Access::Mcp,
            Mode::Ask,
            &rules(&["mcp__s__*"], &[])
        ),
        Decision::Allow
    );
    assert!(matches!(
        d(
            "mcp__s__t",
            &Access::Mcp,
            Mode::Full,
            &rules(&[], &["mcp__s__t"])
        ),
        Decision::Deny(_)
    ));
    let roots = vec![PathBuf::from("/ws")];
    let forced = Call {
        tool: "bash",
        access: &exec("make"),
        mode: Mode::Auto,
        harness: Harness::Code,
        force_ask: true,
        roots: &roots,
        shell: Shell::Bash,
    };
    assert_eq!(decide(&forced, &none), Decision::Ask);
    let unattended = Call {
        tool: "bash",
        access: &exec("make"),
        mode: Mode::Ask,
        harness: Harness::Unattended,
        force_ask: false,
        roots: &roots,
        shell: Shell::Bash,
    };
    assert!(matches!(decide(&unattended, &none), Decision::Deny(_)));
}

#[test]
fn bad_rules_are_reported() {
    assert!(Rule::parse("bash(unclosed").is_err());
    assert!(Rule::parse("(x)").is_err());
    assert!(Rule::parse("edit([)").is_err());
    assert!(Rule::parse("bsah(rm:*)").is_err(), "unknown tool");
    assert!(Rule::parse("mcp__s__t(x)").is_err(), "no specifier");
    assert!(Rule::parse("*").is_err());
    for ok in [
        "bash",
        "bash(rm -rf:*)",
        "read(**/.env)",
        "mcp__s__*",
        "mcp__s__t",
        "web_fetch",
    ] {
        assert!(Rule::parse(ok).is_ok(), "{ok}");
    }
    let e = Rules::from_strings(&["bash(git:*)".into()], &["bash(rm -rf:*".into()]).unwrap_err();
    assert_eq!(e.rule, "bash(rm -rf:*");
}
