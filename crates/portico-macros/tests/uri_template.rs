//! The macros check resource templates at compile time with their own parser (`src/uri.rs`, as
//! the macro crate cannot depend on portico). This test includes that file and holds it to
//! `portico::server::UriTemplate::parse` on one corpus: same verdict, same variables, same
//! error position and wording.

#[path = "../src/uri.rs"]
#[allow(dead_code)]
mod uri;

use uri::variables;

/// Templates valid and invalid; each must be judged as `UriTemplate::parse` judges it.
const CORPUS: &[&str] = &[
    "users://{id}/profile",
    "file:///{+path}",
    "repo://{owner}/{repo}/issues{?state,page}",
    "x://{a,b}{.c}{/d*}{;e:3}{&f}{#g}",
    "x://{var.name}/{a%20b}",
    "x://static/path",
    "x://caf\u{e9}/{x}",
    "",
    "x://{",
    "x://}",
    "x://{}",
    "x://{+}",
    "x://{=a}",
    "x://{,a}",
    "x://{!a}",
    "x://{@a}",
    "x://{|a}",
    "x://{.a.}",
    "x://{..a}",
    "x://{a..b}",
    "x://{a-b}",
    "x://{a:0}",
    "x://{a:10000}",
    "x://{a:}",
    "x://{a:12x}",
    "x://{a*x}",
    "x://{a,}",
    "x://{a b}",
    "x://a b",
    "x://a\"b",
    "x://a|b",
    "x://a%2",
    "x://a%zz",
    "x://{a%2}",
    "x://{a%zz}",
    "x://{a{b}",
    "x://{a}}",
    "x://{?}",
    "x://{a:9999}",
    "x://{a:01}",
];

#[test]
fn agrees_with_portico() {
    for t in CORPUS {
        let ours = variables(t);
        let theirs = portico::server::UriTemplate::parse(t);
        match (&ours, &theirs) {
            (Ok(names), Ok(parsed)) => {
                assert_eq!(names, &parsed.variables().map(str::to_owned).collect::<Vec<_>>(), "{t}")
            }
            (Err(e), Err(p)) => {
                assert_eq!(e.position, p.position(), "{t}");
                assert_eq!(e.what, p.kind().to_string(), "{t}");
            }
            _ => panic!("{t:?}: macro says {ours:?}, portico says {theirs:?}"),
        }
    }
}
