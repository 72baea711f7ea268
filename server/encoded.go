package server

import (
	"github.com/resourced/resourced/store"
)

// Each body is encoded for JSON once, when it is saved, and kept next to
// it in backends that can (KeepsEncoded: bbolt and memory); a read
// then copies that form into the response. The form, its checksum and its
// version are jsonwire's (internal/jsonwire/form.go); docs/decisions.md
// says what it costs.

// formDamaged reports a stored form that failed its checksum and
// remembers it, so that later reads of the same record encode the body.
func (s *Server) formDamaged(m *store.Meta) {
	s.metrics.formsDamaged.Inc()
	s.log.Error("stored JSON form fails its checksum; serving the body (run resourced fsck)", "uri", m.Key.String())
	if s.damagedCount.Load() < maxDamagedForms {
		if _, dup := s.damagedForms.LoadOrStore(damagedKey(m), struct{}{}); !dup {
			s.damagedCount.Add(1)
		}
	}
}

// maxDamagedForms bounds the records remembered as damaged: beyond it a
// damaged large form still never reaches a client whole, its reads are cut.
const maxDamagedForms = 10000

// knownDamaged reports whether the record m describes had a damaged form.
func (s *Server) knownDamaged(m *store.Meta) bool {
	if s.damagedCount.Load() == 0 {
		return false
	}
	_, ok := s.damagedForms.Load(damagedKey(m))
	return ok
}

// damagedKey names one record: a replace (another sha256 or time) is a new
// record with a new form.
func damagedKey(m *store.Meta) string {
	return m.Key.String() + "\x00" + m.SHA256 + "\x00" + m.Modified.String()
}
