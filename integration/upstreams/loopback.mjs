// loopback.mjs — a `node --import` preload that keeps a server that calls
// listen(port) (every address) on 127.0.0.1 instead. server-everything's
// streamableHttp transport does `app.listen(PORT)`; the tests, the
// conformance script and the bench start it as
//
//   PORT=N node --import ./loopback.mjs node_modules/@modelcontextprotocol/server-everything/dist/index.js streamableHttp
//
// A listen call that names a host, a path or a handle is left alone.
import net from 'node:net';

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
    const first = args[0];
    const isPort = typeof first === 'number' || (typeof first === 'string' && /^\d+$/.test(first));
    if (isPort && typeof args[1] !== 'string') {
        args.splice(1, 0, '127.0.0.1');
    } else if (first !== null && typeof first === 'object' && !('path' in first) && !('fd' in first) &&
        !('_handle' in first) && first.host === undefined) {
        args[0] = { ...first, host: '127.0.0.1' };
    }
    return listen.apply(this, args);
};
