//! RFC 6570 URI templates (`portico::server::uri_template`): any template parses or is refused
//! with a position inside it; a URI a template matches, expanded again from the matched
//! values, is matched again (for templates without named expressions: see the known
//! limitation below).

use portico::server::UriTemplate;

/// The check.
pub fn check(data: &[u8]) {
    let (template, uri) = crate::split2(data);
    let (Ok(template), Ok(uri)) = (std::str::from_utf8(template), std::str::from_utf8(uri)) else { return };
    let t = match UriTemplate::parse(template) {
        Ok(t) => t,
        Err(e) => {
            assert!(e.position() <= template.len(), "error position {} past the end", e.position());
            return;
        }
    };
    assert_eq!(t.as_str(), template);
    assert_eq!(t.to_string(), template);
    let Some(m) = t.matches(uri) else { return };
    // Known limitation, not checked: the matcher keeps one preferred path through the template
    // and only then reads names in `{?…}`, `{&…}` and `{;…}` expressions, checks prefix lengths
    // (`{a:3}`) and compares the values of a variable used twice; when that path fails,
    // no other is tried, so such a template can miss a URI it could match
    // (fuzz/known/uri_template/). Names are not in the automaton yet.
    if ["{?", "{&", "{;"].iter().any(|op| template.contains(op))
        || uses_a_variable_twice(template)
        || has_prefix(template)
    {
        return;
    }
    let vars: Vec<(String, String)> = m.clone().into_vec();
    // Known limitation, not checked: reserved (`{+…}`) and fragment (`{#…}`) expansion pass a
    // value's `%XX` triplets through as they are, so a value holding text such as `%81` expands
    // to a URI whose decoded value is not UTF-8, which the matcher refuses
    // (fuzz/known/uri_template/reserved-triplet-not-utf8).
    if (template.contains("{+") || template.contains("{#")) && vars.iter().any(|(_, v)| has_triplet(v)) {
        return;
    }
    let expanded = t.expand_from(vars.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    // Matching is not unique (`{a}{b}` splits "xy" more than one way), so the values may
    // differ; the expansion must still match.
    assert!(t.matches(&expanded).is_some(), "{template:?} matched {uri:?} but not its re-expansion {expanded:?}");
}

/// Whether a variable name appears in more than one place of the template.
fn uses_a_variable_twice(template: &str) -> bool {
    let mut names: Vec<&str> = Vec::new();
    for expr in template.split('{').skip(1).filter_map(|e| e.split_once('}').map(|(e, _)| e)) {
        let expr = expr.trim_start_matches(['+', '#', '.', '/', ';', '?', '&']);
        for var in expr.split(',') {
            let name = var.split(':').next().unwrap_or(var).trim_end_matches('*');
            if names.contains(&name) {
                return true;
            }
            names.push(name);
        }
    }
    false
}

/// Whether an expression has a prefix modifier (`{a:3}`).
fn has_prefix(template: &str) -> bool {
    template.split('{').skip(1).filter_map(|e| e.split_once('}').map(|(e, _)| e)).any(|e| e.contains(':'))
}

/// Whether `value` holds a `%` followed by two hex digits.
fn has_triplet(value: &str) -> bool {
    value.as_bytes().windows(3).any(|w| w[0] == b'%' && w[1].is_ascii_hexdigit() && w[2].is_ascii_hexdigit())
}
