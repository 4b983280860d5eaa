// The TypeScript MCP SDK's client against `aipm serve --http`, driven by
// mcpserver.TestTSClientOverHTTP.
//
//   node client.mjs URL TOKEN AGENT PROTOCOL TARGET
//   (or AIPM_URL, AIPM_TOKEN, AIPM_AGENT, AIPM_PROTOCOL, AIPM_TARGET)
//
// It connects with the SDK's StreamableHTTPClientTransport (Authorization:
// Bearer TOKEN), initializes at PROTOCOL, lists the tools, calls
// authenticate {agent_id: AGENT} (no passkey: the token is the credential),
// get_next_action {wait_seconds: 0} and send_message to TARGET, and prints
// one JSON line of what it saw. On an error it prints {"error", "status"}
// (status: the HTTP status, when the SDK reports one) and exits 1.
//
// Forcing the protocol: the SDK's Client always asks for its own latest
// revision in initialize (LATEST_PROTOCOL_VERSION, 2025-11-25 in 1.32.2)
// and has no option to ask for another; the transport's send is wrapped to
// rewrite the initialize request's params.protocolVersion. The Client
// refuses an answer outside SUPPORTED_PROTOCOL_VERSIONS and has no option
// to widen it either; the exported array is the one the Client reads, so
// the asked revision is appended to it at run time.
//
// The SDK does not speak 2026-07-28 (SEP-2575: server/discover instead of
// initialize, a _meta triple and an Mcp-Method header on every request);
// asked for it in initialize, the server negotiates 2025-11-25. With
// AIPM_TS_HEADER=1 the transport sends Mcp-Protocol-Version: PROTOCOL from
// its first request on, as a 2026-07-28 client does: aipm routes that to its
// sessionless handler, which refuses the SDK's initialize.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/sdk/types.js';
import { readFileSync } from 'node:fs';

const env = process.env;
const [url, token, agent, protocol, target] = [
  process.argv[2] ?? env.AIPM_URL,
  process.argv[3] ?? env.AIPM_TOKEN,
  process.argv[4] ?? env.AIPM_AGENT,
  process.argv[5] ?? env.AIPM_PROTOCOL,
  process.argv[6] ?? env.AIPM_TARGET,
];
if (!url || !token || !agent || !protocol || !target) {
  console.error('usage: node client.mjs URL TOKEN AGENT PROTOCOL TARGET (or AIPM_URL, AIPM_TOKEN, AIPM_AGENT, AIPM_PROTOCOL, AIPM_TARGET)');
  process.exit(2);
}

const sdkVersion = JSON.parse(readFileSync(new URL('./node_modules/@modelcontextprotocol/sdk/package.json', import.meta.url))).version;
const out = { sdk: sdkVersion, requested: protocol, sdk_supported: [...SUPPORTED_PROTOCOL_VERSIONS] };
if (!SUPPORTED_PROTOCOL_VERSIONS.includes(protocol)) {
  SUPPORTED_PROTOCOL_VERSIONS.push(protocol);
  out.widened = true;
}

const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
if (env.AIPM_TS_HEADER === '1') {
  transport.setProtocolVersion(protocol);
}
const send = transport.send.bind(transport);
transport.send = (message, options) => {
  if (message.method === 'initialize') {
    message = { ...message, params: { ...message.params, protocolVersion: protocol } };
  }
  return send(message, options);
};

const client = new Client({ name: 'aipm-tsclient', version: '1' });

// call is one tool call: its structuredContent (what the real clients show
// the model on success), isError, and the text when it is an error.
async function call(name, args) {
  const r = await client.callTool({ name, arguments: args });
  const c = { isError: r.isError === true, structuredContent: r.structuredContent ?? null };
  if (c.isError) {
    c.text = (r.content ?? []).map((x) => x.text ?? '').join('\n');
  }
  return c;
}

try {
  await client.connect(transport);
  out.protocol = transport.protocolVersion;
  out.session_id = transport.sessionId ?? null;
  out.server = client.getServerVersion() ?? null;
  const tools = await client.listTools();
  out.tools = tools.tools.map((t) => t.name);
  out.calls = {};
  out.calls.authenticate = await call('authenticate', { agent_id: agent });
  const st = out.calls.authenticate.structuredContent?.session_token;
  out.calls.get_next_action = await call('get_next_action', { session_token: st, wait_seconds: 0 });
  out.calls.send_message = await call('send_message', { session_token: st, target_agent_id: target, content: `from the TS SDK at ${protocol}` });
  await client.close();
  console.log(JSON.stringify(out));
} catch (err) {
  out.error = String(err?.message ?? err);
  out.status = typeof err?.code === 'number' ? err.code : null;
  console.log(JSON.stringify(out));
  process.exit(1);
}
