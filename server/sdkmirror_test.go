package server

import (
	"os"
	"regexp"
	"testing"
)

// TestSDKMirrorReviewed fails when go.mod requires another go-sdk than the
// one sdkmirror.go was last reviewed against: read go-sdk's dispatch side
// by side with the fast paths, the envelope and the error writer, then
// update sdkMirrorVersion.
func TestSDKMirrorReviewed(t *testing.T) {
	mod, err := os.ReadFile("../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^\s*github\.com/modelcontextprotocol/go-sdk (v\S+)`).FindSubmatch(mod)
	if m == nil {
		t.Fatal("go.mod requires no github.com/modelcontextprotocol/go-sdk")
	}
	if got := string(m[1]); got != sdkMirrorVersion {
		t.Fatalf("go.mod requires go-sdk %s; the fast paths mirror %s (server/sdkmirror.go): review them against the new version, then update sdkMirrorVersion", got, sdkMirrorVersion)
	}
}
