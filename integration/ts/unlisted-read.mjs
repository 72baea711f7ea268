// unlisted-read.mjs — drives resourced with the official MCP TypeScript
// client (@modelcontextprotocol/client, pinned in package.json) and checks
// that an *unlisted* resource_link returned by a tool can be read back.
//
//   node unlisted-read.mjs <mcpURL> <mode>
//
//   mode = auto    versionNegotiation {mode:'auto'}: server/discover probe,
//                  must negotiate 2026-07-28
//   mode = legacy  the client's default negotiation (initialize handshake),
//                  must negotiate 2025-11-25
//
// On success prints one JSON summary line on stdout and exits 0. Any failed
// check prints "FAIL: <what>" on stderr and exits 1. Run by
// integration/ts_test.go (TestTypeScriptClient).

import { Buffer } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import { isDeepStrictEqual, inspect } from 'node:util';

import { Client, ProtocolError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const WANT_VERSION = { auto: '2026-07-28', legacy: '2025-11-25' };

// The bearer token comes from RESOURCED_TOKEN (never the command line, where
// other users of the machine could read it); none is sent when it is unset.
const [mcpURL, mode] = process.argv.slice(2);
const token = process.env.RESOURCED_TOKEN;
if (!mcpURL || !(mode in WANT_VERSION)) {
    console.error('usage: RESOURCED_TOKEN=<jwt> node unlisted-read.mjs <mcpURL> <auto|legacy>');
    process.exit(2);
}

class CheckError extends Error {}

function check(cond, what, got) {
    if (!cond) {
        throw new CheckError(got === undefined ? what : `${what}; got ${show(got)}`);
    }
}

function show(v) {
    return inspect(v, { depth: 8, breakLength: Infinity, maxStringLength: 400 });
}

function log(...args) {
    // Progress goes to stderr so stdout carries only the summary line.
    console.error(`[ts-client ${mode}]`, ...args);
}

const client = new Client(
    { name: 'resourced-ts-integration', version: '1.0.0' },
    mode === 'auto' ? { versionNegotiation: { mode: 'auto' } } : {}
);
const transport = new StreamableHTTPClientTransport(
    new URL(mcpURL),
    token ? { authProvider: { token: async () => token } } : {}
);

async function main() {
    // --- connect -----------------------------------------------------------
    await client.connect(transport);
    const negotiated = client.getNegotiatedProtocolVersion();
    const era = client.getProtocolEra();
    log('connected; negotiated protocol version', negotiated, 'era', era);
    check(negotiated === WANT_VERSION[mode], `negotiated protocol version should be ${WANT_VERSION[mode]}`, negotiated);

    // Listing tools first makes callTool() validate structuredContent
    // against each tool's outputSchema on the client side as well.
    const { tools } = await client.listTools();
    const toolNames = tools.map(t => t.name);
    for (const name of ['save_search_snapshot', 'save_report']) {
        check(toolNames.includes(name), `tools/list should include ${name}`, toolNames);
    }

    // --- save_search_snapshot (unlisted by default) ------------------------
    const query = `ts client ${mode}`;
    const hits = [
        { id: 'a', title: 'A', snippet: 'first' },
        { id: 'b', title: 'B', snippet: 'second', url: 'https://example.com/b', score: 0.5 }
    ];
    const saved = await client.callTool({ name: 'save_search_snapshot', arguments: { query, hits } });
    check(!saved.isError, 'save_search_snapshot should not be an error', saved);
    const sc = saved.structuredContent;
    check(sc && typeof sc === 'object', 'save_search_snapshot should return structuredContent', saved);
    check(sc.status === 'created', 'structuredContent.status should be "created"', sc);

    const textItems = saved.content.filter(c => c.type === 'text');
    check(
        textItems.some(c => {
            try {
                return isDeepStrictEqual(JSON.parse(c.text), sc);
            } catch {
                return false;
            }
        }),
        'content should have a text item whose JSON equals structuredContent',
        saved.content
    );

    const links = saved.content.filter(c => c.type === 'resource_link');
    check(links.length === 1, 'content should have exactly one resource_link', saved.content);
    const link = links[0];
    check(
        typeof link.uri === 'string' && link.uri.startsWith('search://default/results/'),
        'resource_link.uri should start with search://default/results/',
        link
    );
    check(typeof link.name === 'string' && link.name.length > 0, 'resource_link should have a name', link);
    check(link.mimeType === 'application/json', 'resource_link.mimeType should be application/json', link);
    check(typeof link.size === 'number', 'resource_link.size should be a number', link);
    log('saved snapshot', link.uri, 'size', link.size);

    // --- resources/list must not show it ------------------------------------
    const listed = await client.listResources();
    const listedURIs = listed.resources.map(r => r.uri);
    check(!listedURIs.includes(link.uri), 'unlisted snapshot must not appear in resources/list', listedURIs);

    // --- resources/read of the unlisted link ---------------------------------
    // cacheMode 'bypass': always go to the wire, never serve from (or write
    // to) the client's SEP-2549 response cache, so what we assert on is what
    // the server sent. The client returns the wire result object itself
    // (request() validates with a loose schema that passes unknown keys
    // through), so ttlMs/cacheScope are visible on it when the server sends
    // them.
    const read = await client.readResource({ uri: link.uri }, { cacheMode: 'bypass' });
    check(Array.isArray(read.contents) && read.contents.length === 1, 'resources/read should return one content item', read);
    const item = read.contents[0];
    check(item.uri === link.uri, 'contents[0].uri should be the link uri', item);
    check(item.mimeType === 'application/json', 'contents[0].mimeType should be application/json', item);
    check(typeof item.text === 'string', 'contents[0] should carry text', item);
    let doc;
    try {
        doc = JSON.parse(item.text);
    } catch (e) {
        check(false, `contents[0].text should be JSON (${e.message})`, item.text);
    }
    check(isDeepStrictEqual(doc, { query, total: 2, hits }), 'snapshot body should equal {query,total:2,hits} as saved', doc);
    const textBytes = Buffer.byteLength(item.text, 'utf8');
    check(textBytes === link.size, `UTF-8 byte length of the text (${textBytes}) should equal resource_link.size`, link.size);
    check(item._meta?.size === link.size, 'contents[0]._meta.size should equal resource_link.size (CONTRACT §3)', item._meta);
    check(/^[0-9a-f]{64}$/.test(item._meta?.sha256 ?? ''), 'contents[0]._meta.sha256 should be a hex SHA-256 (CONTRACT §3)', item._meta);

    const cacheHints = { ttlMs: read.ttlMs, cacheScope: read.cacheScope };
    if (mode === 'auto') {
        check(
            typeof read.ttlMs === 'number' && Number.isFinite(read.ttlMs) && read.ttlMs >= 0,
            'resources/read result should carry ttlMs (number >= 0) on 2026-07-28',
            read
        );
        check(read.cacheScope === 'private', 'resources/read result should carry cacheScope "private"', read);
    }
    log('read back', link.uri, 'bytes', textBytes, 'cache hints', cacheHints);

    // --- not found -> JSON-RPC -32602 ----------------------------------------
    const missing = 'search://default/results/01NOTTHERE00000000000000000';
    let notFound;
    try {
        const r = await client.readResource({ uri: missing }, { cacheMode: 'bypass' });
        check(false, `reading ${missing} should fail`, r);
    } catch (e) {
        if (e instanceof CheckError) throw e;
        notFound = e;
    }
    // The client surfaces JSON-RPC error responses as ProtocolError (or a
    // subclass such as ResourceNotFoundError) with the wire code in .code
    // and the wire data in .data.
    check(notFound instanceof ProtocolError, 'not-found read should reject with a ProtocolError', notFound);
    check(notFound.code === -32602, 'not-found read should have JSON-RPC code -32602', { code: notFound.code, message: notFound.message, data: notFound.data });
    check(notFound.data?.uri === missing, 'not-found error data should echo {uri} as sent (CONTRACT §3)', notFound.data);
    log('not found ->', notFound.code, notFound.message, show(notFound.data));

    // --- binary report round trip ---------------------------------------------
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    // A fresh path per run: save_report is create-only, so a second run
    // against the same server would otherwise be a conflict (by design).
    const path = `ts/${mode}/${randomUUID()}/bin`;
    const rep = await client.callTool({
        name: 'save_report',
        arguments: { path, mimeType: 'application/octet-stream', blobBase64: bytes.toString('base64') }
    });
    check(!rep.isError, 'save_report should not be an error', rep);
    check(rep.structuredContent?.status === 'created', 'save_report status should be "created"', rep.structuredContent);
    const repLinks = rep.content.filter(c => c.type === 'resource_link');
    check(repLinks.length === 1, 'save_report should return exactly one resource_link', rep.content);
    const repURI = repLinks[0].uri;
    check(repURI === `report://default/${path}`, `save_report link uri should be report://default/${path}`, repURI);
    check(repLinks[0].size === 256, 'save_report link size should be 256', repLinks[0]);

    const bin = await client.readResource({ uri: repURI }, { cacheMode: 'bypass' });
    check(Array.isArray(bin.contents) && bin.contents.length === 1, 'binary read should return one content item', bin);
    const binItem = bin.contents[0];
    check(typeof binItem.blob === 'string', 'binary read should return a blob', binItem);
    check(binItem.mimeType === 'application/octet-stream', 'binary read mimeType should be application/octet-stream', binItem);
    const got = Buffer.from(binItem.blob, 'base64');
    check(got.equals(bytes), 'blob should decode to bytes 0..255', got);
    if (mode === 'auto') {
        check(typeof bin.ttlMs === 'number' && bin.ttlMs >= 0, 'binary read should carry ttlMs on 2026-07-28', bin);
        check(bin.cacheScope === 'private', 'binary read should carry cacheScope "private"', bin);
    }

    await client.close();

    console.log(
        JSON.stringify({
            ok: true,
            mode,
            protocolVersion: negotiated,
            era: era ?? null,
            uri: link.uri,
            size: link.size,
            cacheHints,
            notFoundCode: notFound.code,
            reportURI: repURI,
            blobBytes: got.length
        })
    );
}

try {
    await main();
    process.exit(0);
} catch (e) {
    if (e instanceof CheckError) {
        console.error(`FAIL [${mode}]: ${e.message}`);
    } else {
        console.error(`FAIL [${mode}]: unexpected error: ${show(e)}`);
    }
    try {
        await client.close();
    } catch {
        // already failing; ignore close errors
    }
    process.exit(1);
}
