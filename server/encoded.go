package server

import (
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/resourced/resourced/store"
)

// Each body is encoded for JSON once, when it is saved, and kept next to
// it in backends that can (KeepsEncoded: bbolt and memory); a read
// then copies that form into the response. The form, its checksum and its
// version are jsonwire's (internal/jsonwire/form.go); docs/decisions.md
// says what it costs.

// damagedForms remembers records whose stored form failed its checksum,
// so that later reads of the same record encode the body.
type damagedForms struct {
	seen    sync.Map
	n       atomic.Int64
	counter prometheus.Counter
	log     *slog.Logger
}

// maxDamagedForms bounds the records remembered as damaged: beyond it a
// damaged large form still never reaches a client whole, its reads are cut.
const maxDamagedForms = 10000

// add reports a stored form that failed its checksum and remembers it.
func (d *damagedForms) add(m *store.Meta) {
	d.counter.Inc()
	d.log.Error("stored JSON form fails its checksum; serving the body (run resourced fsck)", "uri", m.Key.String())
	if d.n.Load() < maxDamagedForms {
		if _, dup := d.seen.LoadOrStore(damagedKey(m), struct{}{}); !dup {
			d.n.Add(1)
		}
	}
}

// has reports whether the record m describes had a damaged form.
func (d *damagedForms) has(m *store.Meta) bool {
	if d.n.Load() == 0 {
		return false
	}
	_, ok := d.seen.Load(damagedKey(m))
	return ok
}

// damagedKey names one record: a replace (another sha256 or time) is a new
// record with a new form.
func damagedKey(m *store.Meta) string {
	return m.Key.String() + "\x00" + m.SHA256 + "\x00" + m.Modified.String()
}
