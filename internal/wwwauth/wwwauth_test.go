package wwwauth

import "testing"

func TestParams(t *testing.T) {
	got := Params(`Bearer error="invalid_token", error_description="the token is for \"http://a\", not http://b, scope=x", scope="resources:write" ,realm=plain`)
	want := map[string]string{"error": "invalid_token", "error_description": `the token is for "http://a", not http://b, scope=x`, "scope": "resources:write", "realm": "plain"}
	if len(got) != len(want) {
		t.Fatalf("got %q, want %q", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if p := Params(`Bearer realm="resourced"`); p["error_description"] != "" || p["realm"] != "resourced" {
		t.Errorf("a challenge without a description: %q", p)
	}
	if p := Params(""); len(p) != 0 {
		t.Errorf("no challenge: %q", p)
	}
}
