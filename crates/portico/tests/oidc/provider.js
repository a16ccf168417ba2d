// A real OpenID provider (oidc-provider, pinned by scripts/install-oidc.sh) for the
// resource-server tests in tests/auth_server.rs.
//
//   node provider.js <path to oidc-provider/lib/index.js>
//
// Listens on 127.0.0.1 on a free port, prints one JSON line {"issuer": "..."} on stdout, and
// exits when its stdin closes (so it never outlives the test that started it).
//
// Clients (all client_credentials, client_secret_basic, secret "secret"); every token is issued
// for the resource named by the `resource` parameter (RFC 8707) with the requested scopes:
//   mcp-client    JWT access tokens signed ES256, valid 300 s
//   rs256-client  JWT access tokens signed RS256
//   short-lived   JWT access tokens valid 1 s
//   opaque-client opaque access tokens (for introspection)
//   mcp-server    the resource server itself, allowed to introspect
import { createServer } from 'node:http';
import { generateKeyPairSync } from 'node:crypto';
import { pathToFileURL } from 'node:url';

const modulePath = process.argv[2];
if (!modulePath) {
  console.error('usage: node provider.js <oidc-provider/lib/index.js>');
  process.exit(2);
}
const { default: Provider } = await import(pathToFileURL(modulePath).href);

function jwk(type, options, kid, alg) {
  const { privateKey } = generateKeyPairSync(type, options);
  return { ...privateKey.export({ format: 'jwk' }), kid, alg, use: 'sig' };
}
const keys = [
  jwk('ec', { namedCurve: 'P-256' }, `es-${process.pid}`, 'ES256'),
  jwk('rsa', { modulusLength: 2048 }, `rs-${process.pid}`, 'RS256'),
];

const SCOPES = 'mcp:read mcp:admin';
const client = (client_id) => ({
  client_id,
  client_secret: 'secret',
  grant_types: ['client_credentials'],
  response_types: [],
  redirect_uris: [],
  scope: SCOPES,
  token_endpoint_auth_method: 'client_secret_basic',
});

const http = createServer();
await new Promise((resolve) => http.listen(0, '127.0.0.1', resolve));
const issuer = `http://127.0.0.1:${http.address().port}`;

const provider = new Provider(issuer, {
  clients: ['mcp-client', 'rs256-client', 'short-lived', 'opaque-client', 'mcp-server'].map(client),
  jwks: { keys },
  scopes: SCOPES.split(' '),
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    introspection: {
      enabled: true,
      // Only the resource server may introspect.
      allowedPolicy: async (ctx, caller) => caller.clientId === 'mcp-server',
    },
    resourceIndicators: {
      enabled: true,
      useGrantedResource: async () => true,
      getResourceServerInfo: async (ctx, resource, { clientId }) => ({
        scope: SCOPES,
        audience: resource,
        accessTokenTTL: clientId === 'short-lived' ? 1 : 300,
        accessTokenFormat: clientId === 'opaque-client' ? 'opaque' : 'jwt',
        jwt: { sign: { alg: clientId === 'rs256-client' ? 'RS256' : 'ES256' } },
      }),
    },
  },
});
provider.on('server_error', (ctx, err) => console.error('server_error', err));
http.on('request', provider.callback());

process.stdout.write(`${JSON.stringify({ issuer })}\n`);
process.stdin.on('end', () => process.exit(0));
process.stdin.on('error', () => process.exit(0));
process.stdin.resume();
