package main

import (
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strconv"
)

// -op search: search_resources queries over the reports -prepare saved,
// each with words of its own (searchWords), so a query selects what it
// names rather than every report.

// searchGroups is how many groups the prepared reports fall into: a
// group's word is in 1 report of searchGroups.
const searchGroups = 100

// searchWords is the first line of prepared report i: a word in that
// report alone (d<i>) and its group's word (g<i mod searchGroups>).
func searchWords(i int64) []byte {
	b := append([]byte("doc d"), strconv.FormatInt(i, 10)...)
	b = append(b, " group g"...)
	b = strconv.AppendInt(b, i%searchGroups, 10)
	return append(b, '\n')
}

// searchDocOp saves prepared report w.idx with its words (-op search).
type searchDocOp struct {
	m            *mcpRequest
	prefix, mime string
	text         []byte
}

func (o *searchDocOp) next(w *worker, b []byte) ([]byte, string, string) {
	text := append(searchWords(w.idx), o.text...)
	args := reportArgs(o.prefix+"/"+strconv.FormatInt(w.idx, 10), o.mime, text, true)
	return o.m.appendCall(b, w.nextID(), "save_report", args), "tools/call", "save_report"
}

func (o *searchDocOp) tool() bool { return true }

// searchOp is one search_resources call: by turns a word of one report
// among keys (one hit), and a group's word (keys/searchGroups hits, a
// page of 10 ranked, the total counted up to 10 000). No filter: the
// tenant holds the prepared reports only.
type searchOp struct {
	m    *mcpRequest
	keys int
}

func (o *searchOp) next(w *worker, b []byte) ([]byte, string, string) {
	args := append(make([]byte, 0, 96), `{"query":"`...)
	if w.seq%2 == 0 {
		args = append(args, 'd')
		args = strconv.AppendInt(args, int64(w.rng.IntN(max(o.keys, 1))), 10)
	} else {
		args = append(args, 'g')
		args = strconv.AppendInt(args, int64(w.rng.IntN(searchGroups)), 10)
	}
	args = append(args, `"}`...)
	return o.m.appendCall(b, w.nextID(), "search_resources", args), "tools/call", "search_resources"
}

func (o *searchOp) tool() bool { return true }

// dirBytes is the bytes of the files under dir (the index's on disk).
func dirBytes(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		n += fi.Size()
		return nil
	})
	return n, err
}

// indexSize fills res's index figures from -index-dir: its bytes per
// byte of the -prepare (or -keys) reports of -size.
func indexSize(o *options, res *Result, stderr io.Writer) {
	n, err := dirBytes(o.indexDir)
	if err != nil {
		fmt.Fprintln(stderr, "-index-dir:", err)
		return
	}
	res.IndexBytes = n
	if stored := int64(max(o.prepare, o.keys)) * int64(o.size); stored > 0 {
		res.IndexPerStored = float64(n) / float64(stored)
	}
}
