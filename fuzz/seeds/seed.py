#!/usr/bin/env python3
"""Writes starting corpora, one folder per fuzz target, from the official 2026-07-28 examples
(testdata/spec/schema/2026-07-28/examples, a copy of the spec's) and from inputs the tests use.
Usage: python3 fuzz/seeds/seed.py OUT; then `cargo fuzz cmin TARGET OUT/TARGET` and copy what
it keeps into fuzz/corpus/TARGET (docs/fuzzing.md)."""
import hashlib, json, os, re, sys

here = os.path.dirname(os.path.abspath(__file__))
repo = os.path.dirname(os.path.dirname(here))
out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "out")
examples = os.path.join(repo, "testdata/spec/schema/2026-07-28/examples")

def put(target, data):
    if isinstance(data, str):
        data = data.encode()
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)

docs = {}
for name in sorted(os.listdir(examples)):
    for f in sorted(os.listdir(os.path.join(examples, name))):
        if f.endswith(".json"):
            docs.setdefault(name, []).append(open(os.path.join(examples, name, f), "rb").read())

schema_rs = open(os.path.join(here, "../checks/src/schema.rs")).read()
types = re.findall(r"^\s+t!\((\w+)\),", schema_rs, re.M)
for name, files in docs.items():
    for data in files:
        if name in types:
            put("schema", bytes([types.index(name)]) + data)
        v = json.loads(data)
        if isinstance(v, dict) and v.get("jsonrpc") == "2.0":
            put("jsonrpc", data)
            put("schema", bytes([types.index("JSONRPCMessage")]) + data)
        put("audit_canonical", data)
compact = [json.dumps(json.loads(d), separators=(",", ":")) for n in sorted(docs) for d in docs[n]
           if json.loads(d).__class__ is dict and json.loads(d).get("jsonrpc") == "2.0"]
put("jsonrpc", "[" + ",".join(compact[:3]) + "]")
put("jsonrpc", '{"jsonrpc":"2.0","id":1.0,"method":"ping"}')
put("jsonrpc", '{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"x"}}')
put("jsonrpc", '{"jsonrpc":"2.0","id":"a\\u0000","result":{}}')
for v in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]:
    put("schema", bytes([0]) + v.encode())

# stdio framing: limit, buffer, read sizes, then lines.
lines = compact[:4]
put("stdio_framing", bytes([4, 7, 3, 1, 5, 9]) + "\n".join(lines).encode() + b"\n")
put("stdio_framing", bytes([2, 1, 2, 3, 4]) + "\r\n".join(lines).encode())
put("stdio_framing", bytes([0, 0, 0]) + b"ab\n \n\r\nabc")

# SSE: limit, read sizes, body.
body = "".join(f"id: 0-{i}\nevent: message\ndata: {l}\n\n" for i, l in enumerate(lines))
put("sse", bytes([2, 3, 5, 1, 7]) + body.encode())
put("sse", bytes([2, 0]) + b"retry: 3000\nid: 7-0\ndata:\n\n: keep-alive\n\nevent: endpoint\ndata: /messages?session=1\n\n")
put("sse", bytes([0, 2, 1, 1]) + b"data: {\"a\":\r\ndata: 1}\r\n\r\n")

# URI templates: template 0xff URI.
for t, u in [("file:///{path}", "file:///a/b"), ("{+base}{/seg*}{?q,r}", "http://x/a/b?q=1&r=2"),
             ("db://{table}/{id}{#frag}", "db://users/42#top"), ("{var:3}{;x,y}", "abc;x=1;y=2"),
             ("mem://{.ext*}{&k}", "mem://.a.b&k=v")]:
    put("uri_template", t.encode() + b"\xff" + u.encode())

# requestState: mode, position, binding 0xff rest.
put("request_state", bytes([0, 0]) + b"tools/call\xffAQAAAAKxxxxxxxx")
put("request_state", bytes([1, 9]) + b"tools/call weather\xffstep=2")
put("request_state", bytes([2, 0]) + b"b\xff{\"r\":{\"k\":{\"action\":\"accept\"}}}\xff{\"k2\":true}")

# WWW-Authenticate and metadata: mode, text.
for h in ['Bearer error="invalid_token", error_description="expired", resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource"',
          'DPoP algs="ES256", Bearer scope="files:read files:write", error="insufficient_scope"',
          'Basic realm="x", Bearer realm="a\\"b", scope=read']:
    put("www_authenticate", b"\x00" + h.encode())
put("www_authenticate", b"\x01" + json.dumps({"issuer": "https://auth.example.com", "authorization_endpoint": "https://auth.example.com/authorize",
    "token_endpoint": "https://auth.example.com/token", "code_challenge_methods_supported": ["S256"],
    "dpop_signing_alg_values_supported": ["ES256"], "registration_endpoint": "https://auth.example.com/register"}).encode())
put("www_authenticate", b"\x02" + json.dumps({"resource": "https://mcp.example.com/api", "authorization_servers": ["https://auth.example.com"],
    "scopes_supported": ["files:read"], "bearer_methods_supported": ["header"]}).encode())
put("www_authenticate", b"\x03https://MCP.example.com:443/api/mcp/#frag")

# JWT: mode 0 a token string, mode 1 header 0xff claims, mode 2 claims.
put("jwt", b"\x00eyJhbGciOiJub25lIn0.eyJpc3MiOiJ4In0.")
put("jwt", b"\x01" + json.dumps({"alg": "ES256", "kid": "k1", "typ": "at+jwt"}).encode() + b"\xff" +
    json.dumps({"iss": "https://issuer.example", "exp": 4102444800, "sub": "ada", "scope": "a b", "aud": ["x"]}).encode())
put("jwt", b"\x01" + json.dumps({"alg": "HS256", "kid": "k1"}).encode() + b"\xff" + json.dumps({"iss": "https://issuer.example", "exp": 1}).encode())
put("jwt", b"\x02" + json.dumps({"sub": "ada", "scp": ["a", "b c"], "client_id": "c", "exp": 4102444800}).encode())

# Config: dialect index (Dialect::all() order), then the file; 10 = portico.toml, 11 = expansion.
order = ["portico.toml", "claude_desktop_config.json", "claude_code.mcp.json", "cursor.mcp.json", "vscode.mcp.json",
         "windsurf_mcp_config.json", "zed_settings.json", "codex_config.toml", "goose_config.yaml", "cline_mcp_settings.json"]
dd = os.path.join(repo, "crates/portico-host/tests/data/dialects")
for i, f in enumerate(order):
    put("config", bytes([i]) + open(os.path.join(dd, f), "rb").read())
put("config", bytes([2]) + open(os.path.join(dd, "claude_code_user.claude.json"), "rb").read())
put("config", bytes([10]) + open(os.path.join(repo, "examples/portico.toml"), "rb").read())
for s in ["${HOME}/x", "${TOKEN:-d}", "${env:EMPTY:-e}", "$${literal} $VAR", "${file:/run/secret}", "${unclosed"]:
    put("config", bytes([11]) + s.encode())

# Policy: structured bytes.
import random
r = random.Random(19)
for _ in range(8):
    put("policy", bytes(r.randrange(256) for _ in range(120)))
