// hostrun.mjs — plays a host in a resourced host run with the official MCP
// TypeScript client (@modelcontextprotocol/client, pinned in package.json):
// it calls search_text and search_link, reads the link's URI, and reads the
// never-stored fixture URI, through the run's own endpoint.
//
//   RESOURCED_TOKEN=<jwt> node hostrun.mjs <runEndpointURL> <auto|legacy>
//
// auto negotiates 2026-07-28 (server/discover), legacy 2025-11-25
// (initialize). Prints one JSON summary line on stdout and exits 0; a failed
// check prints "FAIL: <what>" on stderr and exits 1. Run by
// integration/hostrun_test.go (TestHostRun), which then checks what the run
// recorded of this client.

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const WANT_VERSION = { auto: '2026-07-28', legacy: '2025-11-25' };
const [url, mode] = process.argv.slice(2);
const token = process.env.RESOURCED_TOKEN;
if (!url || !(mode in WANT_VERSION)) {
    console.error('usage: RESOURCED_TOKEN=<jwt> node hostrun.mjs <runEndpointURL> <auto|legacy>');
    process.exit(2);
}

function check(cond, what) {
    if (!cond) {
        throw new Error(what);
    }
}

const client = new Client(
    { name: 'resourced-ts-hostrun', version: '1.0.0' },
    mode === 'auto' ? { versionNegotiation: { mode: 'auto' } } : {}
);
const transport = new StreamableHTTPClientTransport(new URL(url), token ? { authProvider: { token: async () => token } } : {});

async function main() {
    await client.connect(transport);
    const negotiated = client.getNegotiatedProtocolVersion();
    check(negotiated === WANT_VERSION[mode], `negotiated ${negotiated}, want ${WANT_VERSION[mode]}`);
    await client.listTools();
    const text = await client.callTool({ name: 'search_text', arguments: {} });
    check(JSON.stringify(text.content).includes('RSD-FIXTURE-T01'), 'search_text lacks T01');
    const linked = await client.callTool({ name: 'search_link', arguments: {} });
    const link = linked.content.find((c) => c.type === 'resource_link');
    check(link && link.uri.endsWith('/results/fixture-link'), 'search_link returned no link');
    const read = await client.readResource({ uri: link.uri }, { cacheMode: 'bypass' });
    check(read.contents[0].text.includes('RSD-FIXTURE-L02'), 'the link body lacks L02');
    let notFound = false;
    try {
        await client.readResource({ uri: link.uri.replace('fixture-link', 'fixture-missing') }, { cacheMode: 'bypass' });
    } catch (e) {
        notFound = true;
    }
    check(notFound, 'reading fixture-missing did not fail');
    await client.close();
    console.log(JSON.stringify({ ok: true, mode, negotiated }));
}

main().catch((e) => {
    console.error('FAIL:', e && e.message ? e.message : e);
    process.exit(1);
});
