//! The fixtures the official MCP conformance suite (`@modelcontextprotocol/conformance`) expects
//! of a server under test, served by Portico.
//!
//! [`fixture_server`] builds a [`Server`] with exactly the tools, resources, prompts and
//! completions the suite's server scenarios call, with the texts and shapes those scenarios
//! describe. The `conformance-server` binary serves it over stdio; the tests of this crate drive
//! it in every era, over the wire, and check the content exactly.

mod prompts;
mod resources;
mod stateless;
mod tasks;
mod tools;

pub use stateless::INPUT_REQUIRED_PROMPT;
pub use tasks::FAILING_JOB_TEXT;

use portico::schema::Implementation;
use portico::server::Server;

/// The name the fixture server introduces itself with.
pub const SERVER_NAME: &str = "portico-conformance";

/// A 1×1 red pixel, as a PNG (69 bytes), base64.
pub const PNG_BASE64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR42mP4z8AAAAMBAQD3A0FDAAAAAElFTkSuQmCC";

/// Eight samples of silence, as a WAV file (8 kHz, mono, 8-bit PCM; 52 bytes), base64.
pub const WAV_BASE64: &str = "UklGRiwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQgAAACAgICAgICAgA==";

/// The environment variable that, set to `1`, makes the `conformance-server` binary add the
/// test-only tools (see [`add_test_tools`]). The official suite never sets it.
pub const TEST_TOOLS_ENV: &str = "PORTICO_CONFORMANCE_TEST_TOOLS";

/// Instructions the fixture server gives to clients.
pub const INSTRUCTIONS: &str = "Fixtures of the MCP conformance suite, served by Portico.";

/// The server with every fixture the conformance suite's server scenarios expect.
///
/// Tools: `test_simple_text`, `test_image_content`, `test_audio_content`,
/// `test_embedded_resource`, `test_multiple_content_types`, `test_tool_with_logging`,
/// `test_error_handling`, `test_tool_with_progress`, `test_sampling`, `test_elicitation`,
/// `test_elicitation_sep1034_defaults`, `test_elicitation_sep1330_enums`,
/// `json_schema_2020_12_tool`; the 2026-07-28 diagnostics `test_missing_capability`,
/// `test_streaming_elicitation`, `test_logging_tool`, `test_trigger_tool_change`,
/// `test_trigger_prompt_change`; the input-required tools `test_input_required_result_*`;
/// `test_custom_header` (an `x-mcp-header` parameter); and the tasks-extension tools `greet`,
/// `slow_compute`, `failing_job`, `protocol_error_job`, `confirm_delete`, `multi_input`,
/// `test_tool_with_task`. Resources: `test://static-text`, `test://static-binary`,
/// `test://watched-resource` and the template `test://template/{id}/data`. Prompts:
/// `test_simple_prompt`, `test_prompt_with_arguments`, `test_prompt_with_embedded_resource`,
/// `test_prompt_with_image`, [`INPUT_REQUIRED_PROMPT`], with completions for
/// `test_prompt_with_arguments`.
pub fn fixture_server() -> Server {
    let builder = Server::builder(
        Implementation::new(SERVER_NAME, env!("CARGO_PKG_VERSION")).with_title("Portico conformance fixtures"),
    )
    .instructions(INSTRUCTIONS);
    let builder = tools::register(builder);
    let builder = resources::register(builder);
    let builder = prompts::register(builder);
    let builder = stateless::register(builder);
    let builder = tasks::register(builder);
    builder.build()
}

/// Adds the tools that only Portico's own tests use, never the suite: `test_sleep(ms)`, which
/// sleeps then answers `"slept"` (a call that stays open on the server side for as long as a
/// test needs).
pub fn add_test_tools(server: &Server) {
    tools::add_test_tools(server);
}

#[cfg(test)]
mod tests {
    use base64::Engine as _;
    use base64::engine::general_purpose::STANDARD;

    use super::*;

    #[test]
    fn media_constants_are_what_they_claim() {
        let png = STANDARD.decode(PNG_BASE64).expect("png base64");
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(&png[12..16], b"IHDR");
        assert_eq!(&png[16..24], &[0, 0, 0, 1, 0, 0, 0, 1], "1x1");
        assert_eq!(&png[png.len() - 8..png.len() - 4], b"IEND");
        let wav = STANDARD.decode(WAV_BASE64).expect("wav base64");
        assert_eq!((&wav[..4], &wav[8..16]), (&b"RIFF"[..], &b"WAVEfmt "[..]));
        let riff_len = u32::from_le_bytes([wav[4], wav[5], wav[6], wav[7]]) as usize;
        assert_eq!(riff_len + 8, wav.len(), "RIFF length covers the file");
    }

    #[test]
    fn capabilities_cover_every_scenario() {
        let server = fixture_server();
        let caps = server.capabilities();
        assert!(caps.tools.is_some() && caps.prompts.is_some() && caps.logging.is_some() && caps.completions.is_some());
        let resources = caps.resources.as_ref().expect("resources");
        assert_eq!(resources.subscribe, Some(true), "resources-subscribe needs subscribe");
    }
}
