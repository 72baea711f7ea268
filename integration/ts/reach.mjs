// reach.mjs — drives resourced with the official MCP TypeScript client
// (@modelcontextprotocol/client, pinned in package.json) and checks what
// issue 16 items 2 and 3 promise every host: read_resource's window in
// structuredContent, the howToRead sentence of linked results, tool schemas
// without type unions (fixtures included), the SEP-2631 download descriptor,
// and signed links bound to the body they were minted for.
//
//   node reach.mjs <mcpURL> <mode> <baseURL> <localURL>
//
//   mode = auto    versionNegotiation {mode:'auto'}: must negotiate 2026-07-28
//   mode = legacy  the initialize handshake: must negotiate 2025-11-25
//
// Signed links start with the server's baseURL; the script fetches them at
// localURL instead. The bearer token comes from RESOURCED_TOKEN. On success
// it prints one JSON summary line on stdout and exits 0; a failed check
// prints "FAIL: <what>" on stderr and exits 1. Run by
// integration/reach_test.go (TestReachTypeScript).

import { createHash } from 'node:crypto';
import { inspect } from 'node:util';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const WANT_VERSION = { auto: '2026-07-28', legacy: '2025-11-25' };
const [mcpURL, mode, baseURL, localURL] = process.argv.slice(2);
const token = process.env.RESOURCED_TOKEN;
if (!mcpURL || !(mode in WANT_VERSION) || !baseURL || !localURL) {
    console.error('usage: RESOURCED_TOKEN=<jwt> node reach.mjs <mcpURL> <auto|legacy> <baseURL> <localURL>');
    process.exit(2);
}

class CheckError extends Error {}

function check(cond, what, got) {
    if (!cond) {
        throw new CheckError(got === undefined ? what : `${what}; got ${inspect(got, { depth: 8, breakLength: Infinity, maxStringLength: 400 })}`);
    }
}

function log(...args) {
    console.error(`[ts-reach ${mode}]`, ...args);
}

// typeUnions lists the paths of every "type" that is an array.
function typeUnions(v, path) {
    if (Array.isArray(v)) {
        return v.flatMap((c, i) => typeUnions(c, `${path}[${i}]`));
    }
    if (v === null || typeof v !== 'object') {
        return [];
    }
    return Object.entries(v).flatMap(([k, c]) => (k === 'type' && Array.isArray(c) ? [`${path}.type`] : typeUnions(c, `${path}.${k}`)));
}

function local(link) {
    check(typeof link === 'string' && link.startsWith(baseURL), `a signed link should start with ${baseURL}`, link);
    return localURL + link.slice(baseURL.length);
}

async function get(link) {
    const r = await fetch(local(link));
    return { status: r.status, text: await r.text() };
}

const client = new Client(
    { name: 'resourced-ts-reach', version: '1.0.0' },
    mode === 'auto' ? { versionNegotiation: { mode: 'auto' } } : {}
);
const transport = new StreamableHTTPClientTransport(new URL(mcpURL), token ? { authProvider: { token: async () => token } } : {});

// call calls a tool (the client validates structuredContent against the
// tool's outputSchema, listed first) and checks the one value: the first
// text item is structuredContent as JSON.
async function call(name, args) {
    const res = await client.callTool({ name, arguments: args });
    check(!res.isError, `${name} should succeed`, res);
    check(res.content[0]?.type === 'text', `${name}: the first item should be text`, res.content);
    check(JSON.stringify(JSON.parse(res.content[0].text)) === JSON.stringify(res.structuredContent), `${name}: the text item should be structuredContent`, res);
    return res;
}

async function main() {
    await client.connect(transport);
    const negotiated = client.getNegotiatedProtocolVersion();
    check(negotiated === WANT_VERSION[mode], `negotiated protocol version should be ${WANT_VERSION[mode]}`, negotiated);

    // --- every schema portable ----------------------------------------------
    const { tools } = await client.listTools();
    check(tools.length >= 20, 'tools/list should include the fixtures', tools.map(t => t.name));
    for (const t of tools) {
        const unions = [...typeUnions(t.inputSchema, 'inputSchema'), ...typeUnions(t.outputSchema ?? {}, 'outputSchema')];
        check(unions.length === 0, `${t.name}: no type unions`, unions);
    }

    // --- save with a link: howToRead and the SEP-2631 descriptor -------------
    let body = '';
    for (let i = 0; body.length < 9000; i++) {
        body += `row ${i}: "q" <b> & \\ ✓\n`;
    }
    const path = `reach/ts-${mode}/report.txt`;
    const uri = `report://default/${path}`;
    const saved = (await call('save_report', { path, mimeType: 'text/plain', text: body, includeDownloadUrl: true, downloadUrlTtl: 'PT5M' })).structuredContent;
    for (const want of ['resources/read', 'read_resource', uri, 'downloadUrl']) {
        check(saved.howToRead.includes(want), `howToRead should mention ${want}`, saved.howToRead);
    }
    const { file, download } = saved.downloadFile;
    const digest = createHash('sha256').update(body).digest('base64url');
    check(file.uri === uri && file.name === 'report.txt' && file.mimeType === 'text/plain' && file.size === Buffer.byteLength(body) &&
        file.digest.algorithm === 'sha-256' && file.digest.value === digest, 'downloadFile.file', file);
    check(download.transport === 'https' && download.method === 'GET' && download.url === saved.downloadUrl &&
        download.expiresAt === saved.downloadUrlExpiresAt && download.expiresAt !== saved.expiresAt, 'downloadFile.download', download);
    const first = await get(download.url);
    check(first.status === 200 && first.text === body, 'GET download.url should serve the body', first.status);

    // --- read_resource through structuredContent alone ----------------------
    let got = '';
    let windows = 0;
    for (let offset = 0; ; windows++) {
        check(windows < 50, 'read_resource should end');
        const res = await call('read_resource', { uri, offset });
        const sc = res.structuredContent;
        check(sc.encoding === 'text' && res.content[1]?.text === sc.text, 'the window item should be the structured text', sc);
        got += sc.text;
        if (sc.nextOffset === undefined) {
            break;
        }
        offset = sc.nextOffset;
    }
    check(got === body && windows >= 1, 'read_resource windows from structuredContent should reassemble the body', windows);

    // --- links bound to the body ---------------------------------------------
    await call('save_report', { path, mimeType: 'text/plain', text: 'replaced', overwrite: true });
    const stale = await get(download.url);
    check(stale.status === 404 && stale.text.includes('ask for a new link') && !stale.text.includes('replaced'), 'a link after a replace should be 404', stale);
    const fresh = (await call('stat_resource', { uri, includeDownloadUrl: true })).structuredContent;
    const now = await get(fresh.downloadUrl);
    check(now.status === 200 && now.text === 'replaced', 'a new link should serve the new body', now);
    const tampered = download.url.replace(/sha256=[0-9a-f]{64}/, `sha256=${createHash('sha256').update('replaced').digest('hex')}`);
    check(tampered !== download.url, 'the link should carry sha256=', download.url);
    check((await get(tampered)).status === 403, 'a tampered digest should be 403');

    console.log(JSON.stringify({ ok: true, mode, negotiated, tools: tools.length, windows }));
}

main().then(
    () => client.close(),
    async err => {
        console.error(err instanceof CheckError ? `FAIL: ${err.message}` : err);
        await client.close().catch(() => {});
        process.exit(1);
    }
);
