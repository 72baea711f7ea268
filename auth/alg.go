package auth

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"strings"
)

// minRSABits is the smallest RSA modulus accepted for verification.
const minRSABits = 2048

// knownAlgorithms are the JWS algorithms that may appear in
// JWTOptions.Algorithms. "none" is deliberately absent.
var knownAlgorithms = map[string]bool{
	"HS256": true, "HS384": true, "HS512": true,
	"RS256": true, "RS384": true, "RS512": true,
	"PS256": true, "PS384": true, "PS512": true,
	"ES256": true, "ES384": true, "ES512": true,
	"EdDSA": true,
}

// isHMAC reports whether alg is a symmetric (HS*) algorithm.
func isHMAC(alg string) bool { return strings.HasPrefix(alg, "HS") }

// keyFits reports whether key may verify a signature made with alg: the key
// type must match the algorithm family (RSA for RS*/PS*, ECDSA on the right
// curve for ES*, Ed25519 for EdDSA, bytes for HS*).
func keyFits(alg string, key any) bool {
	switch alg {
	case "HS256", "HS384", "HS512":
		k, ok := key.([]byte)
		return ok && len(k) > 0
	case "RS256", "RS384", "RS512", "PS256", "PS384", "PS512":
		k, ok := key.(*rsa.PublicKey)
		return ok && k != nil && k.N != nil && k.N.BitLen() >= minRSABits
	case "ES256", "ES384", "ES512":
		k, ok := key.(*ecdsa.PublicKey)
		if !ok || k == nil || k.Curve == nil {
			return false
		}
		want := map[string]elliptic.Curve{"ES256": elliptic.P256(), "ES384": elliptic.P384(), "ES512": elliptic.P521()}[alg]
		return k.Curve.Params().Name == want.Params().Name
	case "EdDSA":
		k, ok := key.(ed25519.PublicKey)
		return ok && len(k) == ed25519.PublicKeySize
	}
	return false
}
