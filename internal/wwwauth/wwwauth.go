// Package wwwauth reads a WWW-Authenticate challenge's parameters (RFC
// 9110 §11.2), for the clients that show a refusal's RFC 6750
// error_description: the Go client and resourced check. Standard library
// only.
package wwwauth

import "strings"

// Params are the auth-params of a WWW-Authenticate challenge
// ("Bearer error=\"invalid_token\", error_description=\"...\""), names
// lower-cased, quoted-string values unescaped (RFC 9110 §11.2).
func Params(challenge string) map[string]string {
	out := map[string]string{}
	_, rest, _ := strings.Cut(strings.TrimSpace(challenge), " ")
	for rest = strings.TrimLeft(rest, " ,"); rest != ""; rest = strings.TrimLeft(rest, " ,") {
		name, after, ok := strings.Cut(rest, "=")
		if !ok {
			break
		}
		var val strings.Builder
		if strings.HasPrefix(after, `"`) {
			k := 1
			for ; k < len(after) && after[k] != '"'; k++ {
				if after[k] == '\\' && k+1 < len(after) {
					k++
				}
				val.WriteByte(after[k])
			}
			rest = after[min(k+1, len(after)):]
		} else {
			end := strings.IndexAny(after, ", ")
			if end < 0 {
				end = len(after)
			}
			val.WriteString(after[:end])
			rest = after[end:]
		}
		out[strings.ToLower(strings.TrimSpace(name))] = val.String()
	}
	return out
}
