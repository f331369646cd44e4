//! Flakestorm v2 files as they are (tests/fixtures/v2, one per v2 example): each loads,
//! with the warnings its first line names, or is refused with one error that names the
//! v2 feature that does not carry over; each that loads also migrates.

mod common;

use common::cli::flakestorm;

/// What a corpus file's first line says `validate` must say of it.
enum Expect {
    Ok(Option<String>),
    Error(String),
}

fn expect(text: &str) -> Expect {
    let line = text.lines().next().unwrap_or_default();
    let rest = line
        .strip_prefix("# expect: ")
        .expect("a first line `# expect: …`");
    if let Some(e) = rest.strip_prefix("error: ") {
        return Expect::Error(e.to_string());
    }
    let warning = rest.strip_prefix("ok; warning: ").map(str::to_string);
    assert!(
        warning.is_some() || rest == "ok",
        "unreadable expectation: {line}"
    );
    Expect::Ok(warning)
}

#[test]
fn every_v2_example_loads_or_names_the_v2_feature_that_does_not_carry_over() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v2");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".yaml"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 27, "{files:?}");
    let (mut loaded, mut refused) = (0, 0);
    for name in &files {
        let text = std::fs::read_to_string(dir.join(name)).unwrap();
        let (code, out, err) = flakestorm(&["validate", "-c", name], &dir);
        match expect(&text) {
            Expect::Ok(warning) => {
                assert_eq!(
                    (code, out.trim()),
                    (0, format!("{name}: ok").as_str()),
                    "{err}"
                );
                if let Some(w) = warning {
                    let said = format!("flakestorm: warning: {w}");
                    assert!(
                        err.lines().any(|l| l.starts_with(&said)),
                        "{name}: {said}\n{err}"
                    );
                }
                let (code, out, err) = flakestorm(&["migrate", name], &dir);
                assert_eq!(code, 0, "{name}: {err}");
                assert!(!out.is_empty(), "{name}");
                loaded += 1;
            }
            Expect::Error(e) => {
                assert_eq!(code, 2, "{name}: {out}{err}");
                assert!(
                    err.starts_with(&format!("flakestorm: {name} has 1 error:\n")),
                    "{err}"
                );
                assert!(err.contains(&format!("\n  - {e}")), "{name}: {e}\n{err}");
                refused += 1;
            }
        }
    }
    assert_eq!((loaded, refused), (19, 8));
}
