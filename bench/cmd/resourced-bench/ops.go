package main

import (
	"bytes"
	"strconv"
	"strings"
)

// readOp reads one URI, or with keys > 0 a URI chosen uniformly at random
// among keys: uri with "{i}" replaced by 0..keys-1.
type readOp struct {
	m      *mcpRequest
	uri    string
	keys   int
	before string // uri before "{i}"
	after  string // uri after "{i}"
}

func newReadOp(m *mcpRequest, uri string, keys int) *readOp {
	o := &readOp{m: m, uri: uri, keys: keys}
	if keys > 0 {
		o.before, o.after, _ = strings.Cut(uri, "{i}")
	}
	return o
}

func (o *readOp) next(w *worker, b []byte) ([]byte, string, string) {
	uri := o.uri
	if o.keys > 0 {
		uri = o.before + strconv.Itoa(w.rng.IntN(o.keys)) + o.after
	}
	return o.m.appendRead(b, w.nextID(), uri), "resources/read", uri
}

func (o *readOp) tool() bool { return false }

// saveReportOp creates a new report at a path unique to the run, worker
// and request: prefix/<run>-<worker>-<seq>. With indexed, the path is
// prefix/<w.idx> and the save replaces (overwrite), as -prepare does.
type saveReportOp struct {
	m       *mcpRequest
	prefix  string
	tail    []byte // `","mimeType":...,"text":...}` after the path
	indexed bool
}

func newSaveReportOp(m *mcpRequest, prefix, mimeType string, text []byte, indexed bool) *saveReportOp {
	args := reportArgs("", mimeType, text, indexed)
	// args is {"path":"","mimeType":...}: keep what follows the empty path.
	tail := bytes.TrimPrefix(args, []byte(`{"path":"`))
	return &saveReportOp{m: m, prefix: prefix, tail: tail, indexed: indexed}
}

func (o *saveReportOp) next(w *worker, b []byte) ([]byte, string, string) {
	args := make([]byte, 0, len(o.prefix)+len(o.tail)+40)
	args = append(args, `{"path":"`...)
	args = append(args, o.prefix...)
	args = append(args, '/')
	if o.indexed {
		args = strconv.AppendInt(args, w.idx, 10)
	} else {
		args = append(args, w.run...)
		args = append(args, '-')
		args = strconv.AppendInt(args, int64(w.id), 10)
		args = append(args, '-')
		args = strconv.AppendInt(args, w.seq+1, 10)
	}
	args = append(args, o.tail...)
	return o.m.appendCall(b, w.nextID(), "save_report", args), "tools/call", "save_report"
}

func (o *saveReportOp) tool() bool { return true }

// saveSnapshotOp saves the same search snapshot again and again; the server
// chooses a new id (URI) for each.
type saveSnapshotOp struct {
	m    *mcpRequest
	args []byte
}

func (o *saveSnapshotOp) next(w *worker, b []byte) ([]byte, string, string) {
	return o.m.appendCall(b, w.nextID(), "save_search_snapshot", o.args), "tools/call", "save_search_snapshot"
}

func (o *saveSnapshotOp) tool() bool { return true }

// listOp lists one page of list_resources (limit 100) at a random place
// in keys stored reports prefix/0..keys-1: the prefix prefix/<i> with i
// uniformly random in [1, keys/100), which matches i and i00..i99 at least,
// so every page is full (100 items) and pages come from everywhere in the
// key space (each is a seek to the prefix, then a page). Below 200 keys the
// prefix is prefix/ itself.
type listOp struct {
	m      *mcpRequest
	prefix string
	keys   int
}

func (o *listOp) next(w *worker, b []byte) ([]byte, string, string) {
	args := make([]byte, 0, len(o.prefix)+64)
	args = append(args, `{"scheme":"report","limit":100,"prefix":"`...)
	args = append(args, o.prefix...)
	args = append(args, '/')
	if stems := o.keys / 100; stems >= 2 {
		args = strconv.AppendInt(args, 1+int64(w.rng.IntN(stems-1)), 10)
	}
	args = append(args, `"}`...)
	return o.m.appendCall(b, w.nextID(), "list_resources", args), "tools/call", "list_resources"
}

func (o *listOp) tool() bool { return true }
