package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/resourced/resourced/config"
)

// The data directory records the URL it was last served at: serve writes
// <dataDir>/served.json once it has started (listening, with its store,
// keys and index open), and `resourced token` with no
// server running mints for it, so that a server started with --listen on
// another port than the config's is not handed tokens for the config's URL
// (issue 28, "the port trap"). It holds no secret.

const servedFileName = "served.json"

// servedRecord is the content of served.json: what the server verified
// (the admin socket's answer), where it listened and when it started.
type servedRecord struct {
	adminVerifier
	Addr string    `json:"addr"`
	At   time.Time `json:"at"`
}

func servedPath(cfg *config.Config) string { return filepath.Join(cfg.DataDir, servedFileName) }

// recordServed writes served.json for the server cfg describes, which
// listens at addr, atomically (a temporary file renamed into place). A
// data directory that does not exist (a server that keeps nothing there)
// gets no record.
func recordServed(cfg *config.Config, addr string) error {
	if _, err := os.Stat(cfg.DataDir); errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	rec := servedRecord{
		adminVerifier: adminVerifier{BaseURL: cfg.CanonicalBaseURL(), Issuer: issuer(cfg), Audience: audiences(cfg)[0]},
		Addr:          addr,
		At:            time.Now().UTC().Truncate(time.Second),
	}
	b, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(cfg.DataDir, "."+servedFileName+".*") // mode 0600
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), servedPath(cfg))
}

// lastServed reads served.json of cfg's data directory; ok is false when
// there is none (no server has listened there since this was added) or
// it does not parse.
func lastServed(cfg *config.Config) (rec servedRecord, ok bool, err error) {
	b, err := os.ReadFile(servedPath(cfg))
	if errors.Is(err, fs.ErrNotExist) {
		return rec, false, nil
	}
	if err != nil {
		return rec, false, err
	}
	if err := json.Unmarshal(b, &rec); err != nil || rec.Audience == "" || rec.Issuer == "" {
		return servedRecord{}, false, fmt.Errorf("%s does not parse; the next start of the server writes it again", servedPath(cfg))
	}
	return rec, true, nil
}
