// The TypeScript MCP SDK's client reading an inbox over `aipm serve --http`
// at an agent's pace, driven by mcpserver.TestTSClientReadsOnce.
//
//   node reads.mjs URL TOKEN AGENT PAUSE_MS
//
// It connects (Authorization: Bearer TOKEN), calls authenticate {agent_id:
// AGENT, purpose: chat}, then get_pending_messages three times, PAUSE_MS
// apart (a model's turn), each passing the ack the read before carried, as
// its instruction says, and prints one JSON line: for each read, the
// contents it got, a redelivered one marked with *. On an error it prints
// {"error"} and exits 1.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

const [url, token, agent, pause] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: 'aipm-tsclient-reads', version: '1' });
const call = async (name, args) => (await client.callTool({ name, arguments: args })).structuredContent;
try {
  await client.connect(transport);
  const st = (await call('authenticate', { agent_id: agent, purpose: 'chat' })).session_token;
  const reads = [];
  let ack;
  for (let i = 0; i < 3; i++) {
    if (i > 0) {
      await new Promise((done) => setTimeout(done, Number(pause)));
    }
    const r = await call('get_pending_messages', ack ? { session_token: st, ack } : { session_token: st });
    reads.push(r.pending_messages.map((m) => m.content + (m.redelivered ? '*' : '')));
    ack = r.ack;
  }
  await client.close();
  console.log(JSON.stringify({ reads }));
} catch (err) {
  console.log(JSON.stringify({ error: String(err?.message ?? err) }));
  process.exit(1);
}
