package notify

import (
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestDedupeListenBeforeGoSDK: repeats leave the list before go-sdk walks
// it, and more distinct URIs than the cap are refused without walking on.
func TestDedupeListenBeforeGoSDK(t *testing.T) {
	s := New(Options{MaxURIs: 3})
	list := make([]string, 0, 100003)
	for i := 0; i < 100000; i++ {
		list = append(list, "report://t1/a")
	}
	list = append(list, "report://t1/b", "report://t1/a", "report://t1/c")
	p := &mcp.SubscriptionsListenParams{Notifications: &mcp.NotificationSubscriptions{ResourceSubscriptions: list}}
	if err := s.Dedupe(p); err != nil {
		t.Fatal(err)
	}
	if got := p.Notifications.ResourceSubscriptions; !slices.Equal(got, []string{"report://t1/a", "report://t1/b", "report://t1/c"}) {
		t.Errorf("deduplicated list = %q", got)
	}
	p.Notifications.ResourceSubscriptions = append(p.Notifications.ResourceSubscriptions, "report://t1/d")
	if err := s.Dedupe(p); err == nil || !strings.Contains(err.Error(), "at most 3 distinct") {
		t.Errorf("four distinct URIs with a cap of 3: %v", err)
	}
}
