//! The config readers (`portico_host::config`): Portico's own TOML, the other clients' dialects
//! (JSON, JSONC, TOML, YAML) and `${…}` expansion. Whatever a reader accepts, written back as
//! `portico.toml` (as `portico config import` does), reads back to the same servers; a parsed
//! `portico.toml` written back is a fixpoint; validation refuses or accepts without a panic;
//! expansion gives back escaped text unchanged.

use std::path::Path;

use portico_host::config::dialect::{self, Dialect, ImportContext, InputRequest};
use portico_host::config::expand::{Source, expand};
use portico_host::config::raw::RawConfig;
use portico_host::config::{ConfigError, parse_toml, validate};

/// Variables and files of a pretend machine: nothing is read from the real one.
struct Fake;

impl Source for Fake {
    fn var(&self, name: &str) -> Option<String> {
        match name {
            "HOME" => Some("/home/ada".into()),
            "EMPTY" => Some(String::new()),
            "TOKEN" => Some("sk-secret".into()),
            _ => None,
        }
    }
    fn file(&self, path: &str) -> Result<String, String> {
        match path {
            "/run/secret" => Ok("from-file\n".into()),
            _ => Err(format!("cannot read {path}")),
        }
    }
}

fn answer(_: &InputRequest) -> Result<String, ConfigError> {
    Ok("typed-in".into())
}

fn toml_of(raw: &RawConfig) -> String {
    toml::to_string(raw).unwrap_or_else(|e| panic!("a config read from a file cannot be written back: {e}\n{raw:#?}"))
}

fn import(d: Dialect, text: &str) {
    let cx = ImportContext {
        workspace: Some(Path::new("/work/project")),
        home: Some(Path::new("/home/ada")),
        input: &answer,
    };
    let Ok(imported) = dialect::read(d, text, &cx) else { return };
    let mut raw = RawConfig::default();
    raw.servers = imported.servers;
    let written = toml_of(&raw);
    let (again, _) =
        parse_toml(&written).unwrap_or_else(|e| panic!("imported config does not read back: {e}\n{written}"));
    assert_eq!(toml_of(&again), written, "imported servers read back differently");
}

fn portico_toml(text: &str) {
    let Ok((raw, _unknown)) = parse_toml(text) else { return };
    let written = toml_of(&raw);
    let (again, _) =
        parse_toml(&written).unwrap_or_else(|e| panic!("written config does not read back: {e}\n{written}"));
    assert_eq!(toml_of(&again), written, "config read back differently");
    let mut raw = raw;
    for s in raw.servers.values_mut() {
        s.env_file = None; // no file is read
    }
    let _ = validate(raw, Path::new("/work/project"), &Fake);
}

fn expansion(text: &str) {
    let _ = expand(text, "field", &Fake);
    if !text.contains('$') {
        assert_eq!(expand(text, "field", &Fake).expect("plain text expands").as_str(), text);
    }
    let escaped = text.replace("${", "$${");
    assert_eq!(expand(&escaped, "field", &Fake).expect("escaped text expands"), text, "escaped {escaped:?}");
}

/// The check.
pub fn check(data: &[u8]) {
    let Some((mode, rest)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(rest);
    let all = Dialect::all();
    match *mode as usize % (all.len() + 2) {
        i if i < all.len() => import(all[i], &text),
        i if i == all.len() => portico_toml(&text),
        _ => expansion(&text),
    }
    for name in ["claude_desktop_config.json", ".mcp.json", "config.toml", "config.yaml", "settings.json", "x.txt"] {
        let _ = dialect::detect(Path::new(name), &text);
    }
}
