// gateway-read.mjs — the official MCP TypeScript client (@modelcontextprotocol/client,
// pinned in package.json) against `resourced gateway` fronting server-filesystem:
// calls read_text_file on a large file, takes the resource_link the gateway put in
// place of the text, reads it back with resources/read and reports what came back.
//
//   node gateway-read.mjs <mcpURL> <auto|legacy> <path>
//
//   auto    versionNegotiation {mode:'auto'}: must negotiate 2026-07-28
//   legacy  the client's default (initialize): must negotiate 2025-11-25
//
// The bearer token comes from RESOURCED_TOKEN, never the command line. Prints one
// JSON line on stdout ({ok, protocol, uri, size, sha256} of the bytes read back);
// the Go test (integration/gateway_fs_test.go) compares them with the file. Any
// failed check prints "FAIL: …" on stderr and exits 1.

import { Buffer } from 'node:buffer';
import { createHash } from 'node:crypto';

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const WANT_VERSION = { auto: '2026-07-28', legacy: '2025-11-25' };
const [mcpURL, mode, path] = process.argv.slice(2);
const token = process.env.RESOURCED_TOKEN;
if (!mcpURL || !(mode in WANT_VERSION) || !path) {
    console.error('usage: RESOURCED_TOKEN=<jwt> node gateway-read.mjs <mcpURL> <auto|legacy> <path>');
    process.exit(2);
}

function fail(what, got) {
    console.error(`FAIL [gateway-read ${mode}]: ${what}${got === undefined ? '' : `; got ${JSON.stringify(got).slice(0, 600)}`}`);
    process.exit(1);
}

const client = new Client(
    { name: 'resourced-ts-gateway', version: '1.0.0' },
    mode === 'auto' ? { versionNegotiation: { mode: 'auto' } } : {}
);
const transport = new StreamableHTTPClientTransport(new URL(mcpURL),
    token ? { authProvider: { token: async () => token } } : {});

try {
    await client.connect(transport);
    const protocol = client.getNegotiatedProtocolVersion();
    if (protocol !== WANT_VERSION[mode]) fail(`negotiated ${protocol}, want ${WANT_VERSION[mode]}`);

    const { tools } = await client.listTools();
    if (!tools.some((t) => t.name === 'read_text_file')) fail('tools/list has no read_text_file', tools.map((t) => t.name));
    if (!tools.some((t) => t.name === 'read_resource')) fail('tools/list has no read_resource', tools.map((t) => t.name));

    const res = await client.callTool({ name: 'read_text_file', arguments: { path } });
    if (res.isError) fail('read_text_file is an error', res.content);
    const links = res.content.filter((c) => c.type === 'resource_link');
    if (links.length !== 1) fail('want one resource_link in place of the large text', res.content.map((c) => c.type));
    const link = links[0];

    const read = await client.readResource({ uri: link.uri }, { cacheMode: 'bypass' });
    if (read.contents.length !== 1 || typeof read.contents[0].text !== 'string') {
        fail('resources/read of the link: want one text content', read.contents.map((c) => Object.keys(c)));
    }
    const bytes = Buffer.from(read.contents[0].text, 'utf8');
    if (link.size !== bytes.length) fail(`the link says ${link.size} bytes, the read gave ${bytes.length}`);
    const sha256 = createHash('sha256').update(bytes).digest('hex');
    if (link._meta?.sha256 !== sha256) fail('the link _meta sha256 is not the read bytes\' sha256', link._meta);
    console.log(JSON.stringify({ ok: true, protocol, uri: link.uri, size: bytes.length, sha256,
        resultBytes: JSON.stringify(res).length }));
    await client.close();
} catch (e) {
    fail(`${e?.name ?? 'Error'}: ${e?.message ?? e}`);
}
