// backing.mjs — "Backing your server" for servers not written in Go: a
// TypeScript MCP server (official SDK, @modelcontextprotocol/server) whose
// tool saves a report in resourced and returns the resource_link, and which
// answers resources/read for those links by proxying them to resourced. The
// part between the SNIPPET markers is the snippet the README shows. Run by
// integration/reportserver_test.go (TestBacking, TestReportServer).
//
//   node backing.mjs serve        the snippet server on $LISTEN (default 127.0.0.1:0),
//                                 backed by $RESOURCED_URL with $RESOURCED_TOKEN;
//                                 prints "listening <host:port>" on stdout
//   node backing.mjs check <url>  the official TS client against an MCP server that has
//                                 generate_report (this one, or examples/reportserver):
//                                 calls it, reads the link back (bearer $USER_KEY), and,
//                                 with $OTHER_KEY, reads it as another user; prints one
//                                 JSON line on stdout
//
// Tokens come from the environment, never the command line.

import { createHash, randomUUID } from 'node:crypto';
import { createServer } from 'node:http';

import { Client, ProtocolError, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { McpServer, ResourceTemplate, createMcpHandler } from '@modelcontextprotocol/server';

function buildCsv(rows = 1000) {
    let csv = 'id,region,amount_cents\n';
    for (let i = 0; i < rows; i++) csv += `${i},${['north', 'south', 'east', 'west'][i % 4]},${(i * 7919) % 100000}\n`;
    return csv;
}

async function serve() {
    // --- SNIPPET START ---------------------------------------------------------------------
    // One client per resourced token: here one producer token for one tenant (map your
    // users to their tenant's token for more). Your users' own credentials never go to resourced.
    const rd = new Client({ name: 'my-server', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await rd.connect(new StreamableHTTPClientTransport(new URL(process.env.RESOURCED_URL),
        { authProvider: { token: async () => process.env.RESOURCED_TOKEN } }));

    function server() {
        const s = new McpServer({ name: 'my-server', version: '1.0.0' });
        s.registerTool('generate_report', { description: 'Builds a CSV report; returns a link to it.' }, async () => {
            const saved = await rd.callTool({ name: 'save_report', arguments:
                { path: `reports/${randomUUID()}`, mimeType: 'text/csv', text: buildCsv() } });
            return { content: saved.content, structuredContent: saved.structuredContent, isError: saved.isError };
        });
        for (const scheme of ['report', 'search']) {
            s.registerResource(scheme, new ResourceTemplate(`${scheme}://{tenant}/{+path}`, { list: undefined }), {},
                async (uri) => { // resourced's -32602 for unknown or foreign URIs propagates as it is
                    const r = await rd.readResource({ uri: uri.href }, { cacheMode: 'bypass' });
                    return { contents: r.contents, ttlMs: r.ttlMs, cacheScope: r.cacheScope };
                });
        }
        return s;
    }
    const mcp = createMcpHandler(server); // mcp.fetch(Request) → Response, both protocol eras
    // --- SNIPPET END -----------------------------------------------------------------------

    // node:http → the web-standard handler (or use an adapter such as @modelcontextprotocol/express).
    const http = createServer(async (req, res) => {
        if (req.url === '/healthz') return res.end('ok\n');
        const chunks = [];
        for await (const c of req) chunks.push(c);
        const body = ['GET', 'HEAD'].includes(req.method) ? undefined : Buffer.concat(chunks);
        const headers = Object.entries(req.headers).flatMap(([k, v]) => (Array.isArray(v) ? v : [v]).map((x) => [k, x]));
        const r = await mcp.fetch(new Request(`http://${req.headers.host}${req.url}`, { method: req.method, headers, body }));
        res.writeHead(r.status, Object.fromEntries(r.headers));
        res.end(Buffer.from(await r.arrayBuffer()));
    });
    const [host, port] = (process.env.LISTEN ?? '127.0.0.1:0').split(':');
    http.listen(Number(port), host, () => {
        const a = http.address();
        console.log(`listening ${a.address}:${a.port}`);
    });
    const stop = () => http.close(() => rd.close().finally(() => process.exit(0)));
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
}

function fail(what, got) {
    console.error(`FAIL [backing check]: ${what}${got === undefined ? '' : `; got ${JSON.stringify(got)}`}`);
    process.exit(1);
}

async function connect(url, key) {
    const c = new Client({ name: 'resourced-backing-check', version: '1.0.0' }, { versionNegotiation: { mode: 'auto' } });
    await c.connect(new StreamableHTTPClientTransport(new URL(url), key ? { authProvider: { token: async () => key } } : {}));
    return c;
}

async function readError(c, uri) {
    try {
        const r = await c.readResource({ uri }, { cacheMode: 'bypass' });
        fail(`reading ${uri} should fail`, r);
    } catch (e) {
        if (!(e instanceof ProtocolError)) fail(`reading ${uri} should reject with a ProtocolError`, String(e));
        return { code: e.code, message: e.message, data: e.data };
    }
}

async function check(url) {
    const c = await connect(url, process.env.USER_KEY);
    const res = await c.callTool({ name: 'generate_report', arguments: {} });
    if (res.isError) fail('generate_report returned an error', res.content);
    const links = res.content.filter((x) => x.type === 'resource_link');
    if (links.length !== 1) fail('generate_report should return one resource_link', res.content);
    const link = links[0];
    const read = await c.readResource({ uri: link.uri }, { cacheMode: 'bypass' });
    if (read.contents?.length !== 1) fail('resources/read should return one content item', read);
    const item = read.contents[0];
    const body = item.text !== undefined ? Buffer.from(item.text, 'utf8') : Buffer.from(item.blob, 'base64');
    const out = {
        ok: true,
        protocolVersion: c.getNegotiatedProtocolVersion(),
        uri: link.uri,
        linkSize: link.size,
        structuredContent: res.structuredContent ?? null,
        text: res.content.filter((x) => x.type === 'text').map((x) => x.text),
        item: { uri: item.uri, mimeType: item.mimeType, _meta: item._meta ?? null, isText: item.text !== undefined },
        bodyBytes: body.length,
        bodySha256: createHash('sha256').update(body).digest('hex'),
        ttlMs: read.ttlMs ?? null,
        cacheScope: read.cacheScope ?? null,
        unknown: await readError(c, link.uri + '-missing')
    };
    await c.close();
    if (process.env.OTHER_KEY) {
        const o = await connect(url, process.env.OTHER_KEY);
        out.otherUser = await readError(o, link.uri);
        await o.close();
    }
    console.log(JSON.stringify(out));
}

const [mode, url] = process.argv.slice(2);
try {
    if (mode === 'serve') await serve();
    else if (mode === 'check' && url) await check(url);
    else {
        console.error('usage: node backing.mjs serve | node backing.mjs check <mcpURL>');
        process.exit(2);
    }
} catch (e) {
    fail('unexpected error', String(e?.stack ?? e));
}
