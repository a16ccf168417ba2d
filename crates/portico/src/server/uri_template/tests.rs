//! RFC 6570 expansion and matching tests.

use super::*;

fn t(s: &str) -> UriTemplate {
    UriTemplate::parse(s).expect("template parses")
}

fn m(template: &str, uri: &str) -> Option<Vec<(String, String)>> {
    t(template).matches(uri).map(UriMatch::into_vec)
}

fn pairs(p: &[(&str, &str)]) -> Option<Vec<(String, String)>> {
    Some(p.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect())
}

fn rfc_vars(name: &str) -> Option<VarValue> {
    let s = |v: &str| Some(VarValue::String(v.to_owned()));
    match name {
        "count" => Some(VarValue::List(vec!["one".into(), "two".into(), "three".into()])),
        "dom" => Some(VarValue::List(vec!["example".into(), "com".into()])),
        "dub" => s("me/too"),
        "hello" => s("Hello World!"),
        "half" => s("50%"),
        "var" => s("value"),
        "who" => s("fred"),
        "base" => s("http://example.com/home/"),
        "path" => s("/foo/bar"),
        "list" => Some(VarValue::List(vec!["red".into(), "green".into(), "blue".into()])),
        "keys" => Some(VarValue::Map(vec![
            ("semi".into(), ";".into()),
            ("dot".into(), ".".into()),
            ("comma".into(), ",".into()),
        ])),
        "v" => s("6"),
        "x" => s("1024"),
        "y" => s("768"),
        "empty" => s(""),
        "empty_keys" => Some(VarValue::Map(vec![])),
        _ => None,
    }
}

#[test]
fn rfc6570_expansion_examples() {
    let cases = [
        // Level 1
        ("{var}", "value"),
        ("{hello}", "Hello%20World%21"),
        // Level 2
        ("{+var}", "value"),
        ("{+hello}", "Hello%20World!"),
        ("{+path}/here", "/foo/bar/here"),
        ("here?ref={+path}", "here?ref=/foo/bar"),
        ("X{#var}", "X#value"),
        ("X{#hello}", "X#Hello%20World!"),
        // Level 3
        ("map?{x,y}", "map?1024,768"),
        ("{x,hello,y}", "1024,Hello%20World%21,768"),
        ("{+x,hello,y}", "1024,Hello%20World!,768"),
        ("{+path,x}/here", "/foo/bar,1024/here"),
        ("{#x,hello,y}", "#1024,Hello%20World!,768"),
        ("{#path,x}/here", "#/foo/bar,1024/here"),
        ("X{.var}", "X.value"),
        ("X{.x,y}", "X.1024.768"),
        ("{/var}", "/value"),
        ("{/var,x}/here", "/value/1024/here"),
        ("{;x,y}", ";x=1024;y=768"),
        ("{;x,y,empty}", ";x=1024;y=768;empty"),
        ("{?x,y}", "?x=1024&y=768"),
        ("{?x,y,empty}", "?x=1024&y=768&empty="),
        ("?fixed=yes{&x}", "?fixed=yes&x=1024"),
        ("{&x,y,empty}", "&x=1024&y=768&empty="),
        // Level 4
        ("{var:3}", "val"),
        ("{var:30}", "value"),
        ("{list}", "red,green,blue"),
        ("{list*}", "red,green,blue"),
        ("{keys}", "semi,%3B,dot,.,comma,%2C"),
        ("{keys*}", "semi=%3B,dot=.,comma=%2C"),
        ("{+path:6}/here", "/foo/b/here"),
        ("{+list}", "red,green,blue"),
        ("{+keys}", "semi,;,dot,.,comma,,"),
        ("{+keys*}", "semi=;,dot=.,comma=,"),
        ("{#path:6}/here", "#/foo/b/here"),
        ("{#keys*}", "#semi=;,dot=.,comma=,"),
        ("X{.var:3}", "X.val"),
        ("X{.list}", "X.red,green,blue"),
        ("X{.list*}", "X.red.green.blue"),
        ("X{.keys*}", "X.semi=%3B.dot=..comma=%2C"),
        ("{/var:1,var}", "/v/value"),
        ("{/list}", "/red,green,blue"),
        ("{/list*}", "/red/green/blue"),
        ("{/list*,path:4}", "/red/green/blue/%2Ffoo"),
        ("{/keys*}", "/semi=%3B/dot=./comma=%2C"),
        ("{;hello:5}", ";hello=Hello"),
        ("{;list}", ";list=red,green,blue"),
        ("{;list*}", ";list=red;list=green;list=blue"),
        ("{;keys}", ";keys=semi,%3B,dot,.,comma,%2C"),
        ("{;keys*}", ";semi=%3B;dot=.;comma=%2C"),
        ("{?var:3}", "?var=val"),
        ("{?list}", "?list=red,green,blue"),
        ("{?list*}", "?list=red&list=green&list=blue"),
        ("{?keys}", "?keys=semi,%3B,dot,.,comma,%2C"),
        ("{?keys*}", "?semi=%3B&dot=.&comma=%2C"),
        ("{&var:3}", "&var=val"),
        ("{&list*}", "&list=red&list=green&list=blue"),
        ("{&keys*}", "&semi=%3B&dot=.&comma=%2C"),
        // Section 3.2 extras
        ("{count}", "one,two,three"),
        ("{/count*}", "/one/two/three"),
        ("{;count*}", ";count=one;count=two;count=three"),
        ("{dom*}", "example,com"),
        ("{half}", "50%25"),
        ("{+half}", "50%25"),
        ("{+dub}", "me/too"),
        ("{?who,dub}", "?who=fred&dub=me%2Ftoo"),
        ("{+base}index", "http://example.com/home/index"),
        ("{undef}", ""),
        ("{?undef}", ""),
        ("{?empty_keys*}", ""),
        ("{x,undef,y}", "1024,768"),
        ("O{empty}X", "OX"),
        ("{;v,empty,who}", ";v=6;empty;who=fred"),
        ("{?v,empty,who}", "?v=6&empty=&who=fred"),
    ];
    for (template, expected) in cases {
        assert_eq!(t(template).expand_values(rfc_vars), expected, "{template}");
    }
}

#[test]
fn expand_string_apis() {
    let tpl = t("users://{id}/profile");
    assert_eq!(tpl.expand(|n| (n == "id").then(|| "a/b c".to_owned())), "users://a%2Fb%20c/profile");
    let mut map = std::collections::HashMap::new();
    map.insert("id".to_owned(), "42".to_owned());
    assert_eq!(tpl.expand_from(&map), "users://42/profile");
    assert_eq!(tpl.expand_from([("id", "7")]), "users://7/profile");
    // Pre-encoded triplets survive reserved expansion only.
    assert_eq!(t("{+p}").expand_from([("p", "a%2Fb")]), "a%2Fb");
    assert_eq!(t("{p}").expand_from([("p", "a%2Fb")]), "a%252Fb");
    // Prefix counts characters, not bytes.
    assert_eq!(t("{p:2}").expand_from([("p", "héllo")]), "h%C3%A9");
    // Literals with non-ASCII are percent-encoded.
    assert_eq!(t("x/é/{p}").expand_from([("p", "1")]), "x/%C3%A9/1");
}

#[test]
fn mcp_examples_both_ways() {
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], &'a str);
    let cases: &[Case] = &[
        ("file:///{path}", &[("path", "notes.txt")], "file:///notes.txt"),
        ("users://{id}/profile", &[("id", "123")], "users://123/profile"),
        ("test://template/{id}/data", &[("id", "abc")], "test://template/abc/data"),
        (
            "repo://{owner}/{repo}/issues{?state,page}",
            &[("owner", "o"), ("repo", "r"), ("state", "open"), ("page", "2")],
            "repo://o/r/issues?state=open&page=2",
        ),
        ("repo://{owner}/{repo}/issues{?state,page}", &[("owner", "o"), ("repo", "r")], "repo://o/r/issues"),
        ("file:///{+path}", &[("path", "home/user/a b.txt")], "file:///home/user/a%20b.txt"),
    ];
    for (template, vars, uri) in cases {
        let tpl = t(template);
        assert_eq!(tpl.expand_from(vars.iter().copied()), *uri, "{template}");
        assert_eq!(m(template, uri), pairs(vars), "{template} ~ {uri}");
    }
}

#[test]
fn query_params_any_order_and_optional() {
    let tpl = "repo://{owner}/{repo}/issues{?state,page}";
    assert_eq!(
        m(tpl, "repo://o/r/issues?page=3&state=closed"),
        pairs(&[("owner", "o"), ("repo", "r"), ("state", "closed"), ("page", "3")])
    );
    assert_eq!(m(tpl, "repo://o/r/issues?page=3"), pairs(&[("owner", "o"), ("repo", "r"), ("page", "3")]));
    assert_eq!(m(tpl, "repo://o/r/issues?state="), pairs(&[("owner", "o"), ("repo", "r"), ("state", "")]));
    // Unknown or repeated parameters do not match.
    assert_eq!(m(tpl, "repo://o/r/issues?sort=asc"), None);
    assert_eq!(m(tpl, "repo://o/r/issues?page=1&page=2"), None);
    // `{&...}` following `{?...}` joins the same parameter set.
    assert_eq!(m("s{?q}{&lang}", "s?lang=en&q=x"), pairs(&[("q", "x"), ("lang", "en")]));
    assert_eq!(m("s?fixed=1{&x}", "s?fixed=1&x=2"), pairs(&[("x", "2")]));
    // Exploded named variables collect repeats.
    assert_eq!(m("s{?tag*}", "s?tag=a&tag=b"), pairs(&[("tag", "a,b")]));
}

#[test]
fn reserved_and_fragment() {
    assert_eq!(m("file:///{+path}", "file:///a/b/../c.txt"), pairs(&[("path", "a/b/../c.txt")]));
    // The shortest extent wins, leaving the query to `q`.
    assert_eq!(m("file:///{+path}{?q}", "file:///a/b?q=1"), pairs(&[("path", "a/b"), ("q", "1")]));
    assert_eq!(m("file:///{+path}", "file:///a/b?q=1"), pairs(&[("path", "a/b?q=1")]));
    assert_eq!(m("doc://{+path}{#section}", "doc://x/y#intro"), pairs(&[("path", "x/y"), ("section", "intro")]));
    assert_eq!(m("doc://{+path}{#section}", "doc://x/y"), pairs(&[("path", "x/y")]));
    assert_eq!(m("{+dir}/{file}", "a/b/c.txt"), pairs(&[("dir", "a/b"), ("file", "c.txt")]));
    assert_eq!(m("file:///{+path}", "file:///"), None, "empty value");
}

#[test]
fn other_operators() {
    assert_eq!(m("api{/ver,res}", "api/v1/users"), pairs(&[("ver", "v1"), ("res", "users")]));
    assert_eq!(m("api{/ver,res}", "api/v1"), pairs(&[("ver", "v1")]));
    assert_eq!(m("api{/ver,res}", "api"), pairs(&[]));
    assert_eq!(m("api{/ver,res}", "api/v1/users/extra"), None);
    assert_eq!(m("p{/segs*}", "p/a/b%2Fc/d"), pairs(&[("segs", "a/b/c/d")]));
    assert_eq!(m("file{.ext1,ext2}", "file.tar.gz"), pairs(&[("ext1", "tar"), ("ext2", "gz")]));
    assert_eq!(m("m{;x,y}", "m;y=2;x=1"), pairs(&[("x", "1"), ("y", "2")]));
    assert_eq!(m("m{;x,y}", "m;x"), pairs(&[("x", "")]));
    assert_eq!(m("m{;x,y}", "m;z=1"), None);
    assert_eq!(m("{x,y}", "1024,768"), pairs(&[("x", "1024"), ("y", "768")]));
    assert_eq!(m("{x}", "a,b"), pairs(&[("x", "a,b")]));
    assert_eq!(m("{v:3}", "abc"), pairs(&[("v", "abc")]));
    assert_eq!(m("{v:3}", "abcd"), None);
    assert_eq!(m("{a}/{a}", "x/x"), pairs(&[("a", "x")]));
    assert_eq!(m("{a}/{a}", "x/y"), None);
}

#[test]
fn non_matches() {
    assert_eq!(m("users://{id}/profile", "user://123/profile"), None);
    assert_eq!(m("users://{id}/profile", "users://123/profile/x"), None);
    assert_eq!(m("users://{id}/profile", "users://1/2/profile"), None);
    assert_eq!(m("users://{id}/profile", "users://123"), None);
    assert_eq!(m("users://{id}/profile", "users:///profile"), None);
    assert_eq!(m("users://{id}/profile", "users://123/profil"), None);
    assert_eq!(m("test://template/{id}/data", "test://template/x/date"), None);
    assert_eq!(m("file:///{path}", "file:///a/b"), None);
    assert_eq!(m("file:///{path}", "file:///a?b"), None);
    assert_eq!(m("file:///{path}", "http:///a"), None);
    assert_eq!(m("static://x", "static://x"), pairs(&[]));
    assert_eq!(m("static://x", "static://y"), None);
    assert_eq!(m("static://x", ""), None);
    assert_eq!(m("{x}", ""), None);
}

#[test]
fn percent_decoding() {
    assert_eq!(m("users://{id}/profile", "users://a%20b%2Fc/profile"), pairs(&[("id", "a b/c")]));
    assert_eq!(m("users://{id}/profile", "users://%C3%A9t%C3%A9/profile"), pairs(&[("id", "été")]));
    assert_eq!(m("s{?q}", "s?q=a%26b%3Dc+d"), pairs(&[("q", "a&b=c+d")]));
    // Invalid escapes and invalid UTF-8 do not match.
    assert_eq!(m("users://{id}/profile", "users://%zz/profile"), None);
    assert_eq!(m("users://{id}/profile", "users://%4/profile"), None);
    assert_eq!(m("users://{id}/profile", "users://%FF/profile"), None);
    // A literal with non-ASCII matches its encoded form.
    assert_eq!(m("x/é/{p}", "x/%C3%A9/1"), pairs(&[("p", "1")]));
}

#[test]
fn expand_then_match_round_trips() {
    let values = ["plain", "a b", "ü/ß?&=#", "100%", "a,b", ""];
    for template in ["users://{id}/profile", "file:///{+path}", "x{?q,r}", "x{/a}", "x{;a}", "x{#a}"] {
        let tpl = t(template);
        for v in values {
            if v.is_empty() && template.contains("{id}") {
                continue; // expands to an empty segment, which never matches
            }
            if v.is_empty() && template.contains("{+") {
                continue; // likewise
            }
            let uri = tpl.expand_from([("id", v), ("path", v), ("q", v), ("a", v)]);
            let got = tpl.matches(&uri).expect("expansion matches its template");
            let name = tpl.variables().next().expect("one variable");
            assert_eq!(got.get(name), Some(v), "{template} with {v:?} -> {uri}");
        }
    }
}

#[test]
fn adversarial_input_terminates() {
    let many_slashes = "/".repeat(100_000);
    let many_a = "a".repeat(100_000);
    let cases = [
        ("{+a}/{+b}/{+c}/{+d}/end", format!("{many_slashes}x")),
        ("{+a}{+b}{+c}{+d}!", many_a.clone()),
        ("{a}{b}{c}{d}{e}{f}!", many_a.clone()),
        ("x{?a,b,c}", format!("x?{}", "a=1&".repeat(25_000))),
        ("{/a*}{/b*}z", many_slashes.clone()),
    ];
    for (template, uri) in &cases {
        assert!(uri.len() <= MAX_MATCH_LEN);
        assert_eq!(t(template).matches(uri), None, "{template}");
    }
    // A successful match on long input.
    let long = format!("file:///{}", "ab/".repeat(30_000));
    let got = t("file:///{+path}").matches(&long).expect("matches");
    assert_eq!(got.get("path").map(str::len), Some(90_000));
    // Over the limit: refused outright.
    let huge = format!("file:///{}", "a".repeat(MAX_MATCH_LEN));
    assert_eq!(t("file:///{+path}").matches(&huge), None);
}

#[test]
fn several_exploded_variables() {
    assert_eq!(m("{/a*,b*}", "/1/2/3"), pairs(&[("a", "1/2"), ("b", "3")]));
    assert_eq!(m("{/a*,b*}", "/1"), pairs(&[("a", "1")]));
    assert_eq!(m("{?a*,b*}", "?b=1&a=2&b=3"), pairs(&[("a", "2"), ("b", "1,3")]));
    assert_eq!(m("{.a,b*,c}", ".1.2.3.4"), pairs(&[("a", "1"), ("b", "2.3"), ("c", "4")]));
}

#[test]
fn random_uris_never_panic() {
    use rand::RngCore as _;
    let templates: Vec<UriTemplate> = [
        "{x}",
        "{+x}",
        "{#x,y}",
        "a{.x,y*}",
        "{/x*,y,z*}",
        "{;x,y*}",
        "{?x,y*}{&z}",
        "u://{a}/{+b}{?c}{#d}",
        "{x:2}{y:1}",
        "{a}{a}",
    ]
    .iter()
    .map(|s| t(s))
    .collect();
    let alphabet = b"ab/?#&=;.,%2F*+:%zz\xc3\xa9";
    let mut rng = rand::rng();
    for _ in 0..3000 {
        let len = (rng.next_u32() % 24) as usize;
        let bytes: Vec<u8> = (0..len).map(|_| alphabet[rng.next_u32() as usize % alphabet.len()]).collect();
        let uri = String::from_utf8_lossy(&bytes);
        for tpl in &templates {
            if let Some(found) = tpl.matches(&uri) {
                assert!(found.iter().all(|(k, _)| tpl.variables().any(|n| n == k)));
            }
        }
    }
}

#[test]
fn parse_errors() {
    use UriTemplateErrorKind::*;
    let cases = [
        ("users://{id/profile", 8, UnclosedBrace),
        ("a{b{c}}", 1, UnclosedBrace),
        ("a}", 1, UnmatchedCloseBrace),
        ("x{}", 1, EmptyExpression),
        ("x{+}", 1, EmptyExpression),
        ("{=x}", 1, ReservedOperator),
        ("{|x}", 1, ReservedOperator),
        ("{a-b}", 2, InvalidVariableName),
        ("{a,}", 3, InvalidVariableName),
        ("{,a}", 1, ReservedOperator),
        ("{.a.}", 3, InvalidVariableName),
        ("{a..b}", 3, InvalidVariableName),
        ("{ a}", 1, InvalidVariableName),
        ("{a%2}", 2, InvalidVariableName),
        ("{a:0}", 3, InvalidPrefix),
        ("{a:}", 3, InvalidPrefix),
        ("{a:10000}", 3, InvalidPrefix),
        ("{a*x}", 3, UnexpectedAfterModifier),
        ("{a:3*}", 4, UnexpectedAfterModifier),
        ("a b", 1, InvalidLiteral),
        ("a|b", 1, InvalidLiteral),
        ("a%2", 1, InvalidPercentEncoding),
        ("a%zz", 1, InvalidPercentEncoding),
    ];
    for (template, position, kind) in cases {
        let e = UriTemplate::parse(template).expect_err(template);
        assert_eq!((e.position(), e.kind()), (position, kind), "{template}: {e}");
    }
    let e = UriTemplate::parse("users://{id/profile").expect_err("unclosed");
    assert_eq!(e.to_string(), "invalid URI template at byte 8: unclosed '{'");
}

#[test]
fn parse_accepts_full_syntax() {
    let tpl = t("x{+a,b:3}{#c*}{.d}{/e,f*}{;g}{?h,i.j}{&k_1,%41}y");
    assert_eq!(tpl.as_str(), "x{+a,b:3}{#c*}{.d}{/e,f*}{;g}{?h,i.j}{&k_1,%41}y");
    assert_eq!(tpl.variables().collect::<Vec<_>>(), ["a", "b", "c", "d", "e", "f", "g", "h", "i.j", "k_1", "%41"]);
    assert!(!tpl.is_literal());
    assert!(t("static://x").is_literal());
    assert_eq!(t("{a}{a}").variables().count(), 1);
    assert_eq!("a{b}".parse::<UriTemplate>().map(|t| t.to_string()), Ok("a{b}".to_owned()));
}

#[test]
fn uri_match_accessors() {
    let got = t("{a}/{b}").matches("1/2").expect("matches");
    assert_eq!(got.len(), 2);
    assert!(!got.is_empty());
    assert_eq!(got.get("c"), None);
    assert_eq!(got.iter().collect::<Vec<_>>(), [("a", "1"), ("b", "2")]);
    assert_eq!((&got).into_iter().count(), 2);
    let owned: Vec<(String, String)> = got.into_iter().collect();
    assert_eq!(owned.len(), 2);
}

/// Adjacent variables never split a `%XX` triplet or a UTF-8 sequence between them (found by
/// the `uri_template` fuzz target: `{a}{b}` did not match `%41%42`).
#[test]
fn adjacent_variables_split_between_characters() {
    let m = |tpl: &str, uri: &str| t(tpl).matches(uri).map(|m| m.into_vec());
    let pair = |a: &str, b: &str| Some(vec![("a".to_owned(), a.to_owned()), ("b".to_owned(), b.to_owned())]);
    assert_eq!(m("{a}{b}", "%41%42"), pair("A", "B"));
    assert_eq!(m("{a:30}{b:30}", "%03%00%00"), pair("\u{3}", "\0\0"));
    assert_eq!(m("{a}{b}", "éx"), pair("é", "x"));
    assert_eq!(m("{a}{b}", "x€"), pair("x", "€"));
    assert_eq!(m("{a*}{b}", "%D2%9E.b"), pair("Ҟ", ".b"));
    assert_eq!(m("{a}{b}", "%E2%82%AC%F0%9F%98%80"), pair("€", "😀"));
}
