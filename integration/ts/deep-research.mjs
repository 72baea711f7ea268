// deep-research.mjs — drives resourced's search and fetch tools (index.deepResearch: true)
// with the official MCP TypeScript client (@modelcontextprotocol/client, pinned in
// package.json), as ChatGPT's deep research calls them, and checks OpenAI's documented
// shapes: search(query) answers exactly one text item holding {"results":[{id,title,url}]},
// fetch(id) exactly one text item holding {id,title,text,url,metadata}. The client
// validates each structuredContent against the tool's outputSchema.
//
//   node deep-research.mjs <mcpURL> <mode>
//
//   mode = auto    versionNegotiation {mode:'auto'}: must negotiate 2026-07-28
//   mode = legacy  the initialize handshake: must negotiate 2025-11-25
//
// The bearer token comes from RESOURCED_TOKEN. On success it prints one JSON summary
// line on stdout and exits 0; a failed check prints "FAIL: <what>" on stderr and exits
// 1. Run by integration/deepresearch_test.go (TestDeepResearchTypeScript).

import { inspect } from 'node:util';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const WANT_VERSION = { auto: '2026-07-28', legacy: '2025-11-25' };
const [mcpURL, mode] = process.argv.slice(2);
const token = process.env.RESOURCED_TOKEN;
if (!mcpURL || !(mode in WANT_VERSION)) {
    console.error('usage: RESOURCED_TOKEN=<jwt> node deep-research.mjs <mcpURL> <auto|legacy>');
    process.exit(2);
}

class CheckError extends Error {}

function check(cond, what, got) {
    if (!cond) {
        throw new CheckError(got === undefined ? what : `${what}; got ${inspect(got, { depth: 8, breakLength: Infinity, maxStringLength: 400 })}`);
    }
}

const client = new Client(
    { name: 'resourced-ts-deep-research', version: '1.0.0' },
    mode === 'auto' ? { versionNegotiation: { mode: 'auto' } } : {}
);
const transport = new StreamableHTTPClientTransport(new URL(mcpURL), token ? { authProvider: { token: async () => token } } : {});

// one calls a tool and returns the value of its only content item, which
// must be text holding JSON with exactly keys (sorted).
async function one(name, args, keys) {
    const res = await client.callTool({ name, arguments: args });
    check(!res.isError, `${name} should succeed`, res);
    check(res.content.length === 1 && res.content[0].type === 'text', `${name}: exactly one text content item`, res.content);
    const v = JSON.parse(res.content[0].text);
    check(JSON.stringify(Object.keys(v).sort()) === JSON.stringify(keys), `${name}: keys ${keys}`, Object.keys(v));
    check(JSON.stringify(v) === JSON.stringify(res.structuredContent), `${name}: structuredContent is the text item's value`, res);
    return v;
}

async function main() {
    await client.connect(transport);
    const negotiated = client.getNegotiatedProtocolVersion();
    check(negotiated === WANT_VERSION[mode], `negotiated protocol version should be ${WANT_VERSION[mode]}`, negotiated);

    const { tools } = await client.listTools();
    const byName = Object.fromEntries(tools.map(t => [t.name, t]));
    check(byName.search && byName.fetch, 'tools/list should have search and fetch', tools.map(t => t.name));
    check(byName.search.inputSchema.required?.includes('query') && byName.search.inputSchema.properties.query.type === 'string',
        'search takes a query string', byName.search.inputSchema);
    check(byName.fetch.inputSchema.required?.includes('id') && byName.fetch.inputSchema.properties.id.type === 'string',
        'fetch takes an id string', byName.fetch.inputSchema);

    const word = `zebrafish${mode}${Date.now()}`;
    const body = `# Field notes\n\nThe ${word} count rose in March.\n`;
    const saved = await client.callTool({ name: 'save_report', arguments: { path: `deep/${mode}/notes`, mimeType: 'text/markdown', text: body, title: 'Field notes' } });
    check(!saved.isError, 'save_report should succeed', saved);
    const uri = saved.structuredContent.uri;

    const found = await one('search', { query: `How did the ${word} count change?` }, ['results']);
    check(found.results.length === 1, 'search should find the one report', found);
    const hit = found.results[0];
    check(JSON.stringify(Object.keys(hit).sort()) === '["id","title","url"]', 'a result has exactly id, title, url', hit);
    check(hit.id === uri && hit.url === uri && hit.title === 'Field notes', 'the result names the report', hit);

    const doc = await one('fetch', { id: hit.id }, ['id', 'metadata', 'text', 'title', 'url']);
    check(doc.id === uri && doc.url === uri && doc.title === 'Field notes' && doc.text === body, 'fetch returns the report whole', doc);
    check(typeof doc.metadata === 'object' && doc.metadata.truncated === false && doc.metadata.mimeType === 'text/markdown', 'fetch metadata', doc.metadata);

    const missing = await client.callTool({ name: 'fetch', arguments: { id: `${uri}-none` } });
    check(missing.isError === true && missing.structuredContent?.errorKind === 'not_found', 'fetch of an unknown id is not_found', missing);

    console.log(JSON.stringify({ ok: true, mode, negotiated, results: found.results.length }));
}

main().then(
    () => client.close(),
    async err => {
        console.error(err instanceof CheckError ? `FAIL: ${err.message}` : err);
        await client.close().catch(() => {});
        process.exit(1);
    }
);
