package service

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/resourced/resourced/store"
	"github.com/resourced/resourced/toolapi"
)

// Scheme kinds: what a scheme holds and which call writes it.
const (
	KindSearch = "search" // immutable search snapshots, server-chosen ids
	KindReport = "report" // reports at caller-chosen paths, replaceable
)

// Scheme is the policy of one URI scheme.
type Scheme struct {
	Name         string
	Kind         string        // KindSearch or KindReport
	TTL          time.Duration // ttlMs of resources/read
	Retention    time.Duration // default life of a saved resource
	MaxRetention time.Duration // cap on a requested retention
	MaxBytes     int64         // largest body
}

// Limits bound what one save may carry; zero fields take the defaults,
// which are written here and nowhere else.
type Limits struct {
	MaxHits             int // hits of one search snapshot (default 10000)
	MaxTitleBytes       int // default 512
	MaxDescriptionBytes int // default 4096
	MaxPathBytes        int // path of a report below its tenant (default 512)
	MaxReadChars        int // largest result of read_resource, in characters (default 40000)
}

// WithDefaults returns l with every zero (or negative) field set to its
// default.
func (l Limits) WithDefaults() Limits {
	if l.MaxHits <= 0 {
		l.MaxHits = 10000
	}
	if l.MaxTitleBytes <= 0 {
		l.MaxTitleBytes = 512
	}
	if l.MaxDescriptionBytes <= 0 {
		l.MaxDescriptionBytes = 4096
	}
	if l.MaxPathBytes <= 0 {
		l.MaxPathBytes = 512
	}
	if l.MaxReadChars <= 0 {
		l.MaxReadChars = 40000
	}
	return l
}

// resolve checks the shared save options against the schemes of kind and
// returns the scheme, the retention (capped by the scheme's maximum) and
// the visibility.
func (s *Service) resolve(o *toolapi.SaveOptions, kind string) (*Scheme, time.Duration, store.Visibility, *Failure) {
	sc, f := s.schemeFor(o.Scheme, kind)
	if f != nil {
		return nil, 0, "", f
	}
	retention := sc.Retention
	if len(o.Retention) > 0 && string(o.Retention) != "null" {
		d, f := ParseRetention(o.Retention)
		if f != nil {
			return nil, 0, "", f
		}
		retention = min(d, sc.MaxRetention)
	}
	vis := store.Private
	switch o.Visibility {
	case "", "private":
	case "public":
		vis = store.Public
	default:
		return nil, 0, "", InvalidField("visibility", "must be \"private\" or \"public\", not "+Quote(o.Visibility))
	}
	return sc, retention, vis, nil
}

// expiry is the expiry of a save at now kept for retention.
func expiry(now time.Time, retention time.Duration) time.Time {
	return now.Add(retention).UTC().Truncate(time.Millisecond)
}

// schemeFor picks the scheme of kind a save names, or the one it means
// when it names none.
func (s *Service) schemeFor(name, kind string) (*Scheme, *Failure) {
	if name != "" {
		if sc := s.schemes[name]; sc != nil && sc.Kind == kind {
			return sc, nil
		}
		return nil, InvalidField("scheme", fmt.Sprintf("%s is not a configured %s scheme", Quote(name), kind))
	}
	var names []string
	for _, n := range s.SchemeNames() {
		if s.schemes[n].Kind == kind {
			names = append(names, n)
		}
	}
	switch {
	case s.schemes[kind] != nil && s.schemes[kind].Kind == kind:
		return s.schemes[kind], nil
	case len(names) == 1:
		return s.schemes[names[0]], nil
	case len(names) == 0:
		return nil, Fail(KindValidation, "this server has no "+kind+" scheme configured")
	}
	return nil, InvalidField("scheme", "is required here: choose one of "+strings.Join(names, ", "))
}

// checkSize refuses an empty body or one larger than sc holds.
func checkSize(sc *Scheme, n int) *Failure {
	if int64(n) > sc.MaxBytes {
		return Fail(KindTooLarge, fmt.Sprintf("the body is %d bytes; %s:// stores at most %d bytes per resource. Split it into several resources.", n, sc.Name, sc.MaxBytes))
	}
	if n == 0 {
		return Fail(KindValidation, "the body is empty; resourced stores non-empty bodies only")
	}
	return nil
}

// LinkTTL checks the download link arguments of a save, stat or read: it
// returns 0 when no link is wanted, and the link's life otherwise. The
// transport signs the link (server/blobs.go).
func (s *Service) LinkTTL(include bool, raw json.RawMessage) (time.Duration, *Failure) {
	given := len(raw) > 0 && string(raw) != "null"
	if !include {
		if given {
			return 0, InvalidField("downloadUrlTtl", "needs includeDownloadUrl: true")
		}
		return 0, nil
	}
	if s.links == nil {
		return 0, InvalidField("includeDownloadUrl", "this server has no signing key for download links; read the resource with resources/read or read_resource")
	}
	if !given {
		return s.links.DefaultTTL, nil
	}
	d, f := ParseDuration("downloadUrlTtl", raw)
	if f != nil {
		return 0, f
	}
	return min(d, s.links.MaxTTL), nil
}
