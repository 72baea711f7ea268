package integration

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// TestRegisterModel checks the model on small histories, without a
// server: each rule of the contract accepts what it should and rejects
// what it should not.
func TestRegisterModel(t *testing.T) {
	a, b := sum([]byte("a")), sum([]byte("b"))
	op := func(client int, call, ret int64, in regInput, out regOutput) porcupine.Operation {
		in.Key = "k"
		return porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret}
	}
	ok, conflict, missing, unknown := regOutput{Out: outOK}, regOutput{Out: outConflict}, regOutput{Out: outNotFound}, regOutput{Out: outUnknown}
	read := func(sha string) regOutput { return regOutput{Out: outOK, Sha: sha} }
	for _, c := range []struct {
		name string
		want bool
		h    []porcupine.Operation
	}{
		{"create then read", true, []porcupine.Operation{op(0, 0, 1, regInput{Kind: opCreate, Sha: a}, ok), op(1, 2, 3, regInput{Kind: opRead}, read(a))}},
		{"read of a missing key", true, []porcupine.Operation{op(0, 0, 1, regInput{Kind: opRead}, missing)}},
		{"read of nothing written", false, []porcupine.Operation{op(0, 0, 1, regInput{Kind: opRead}, read(a))}},
		{"two creates both win", false, []porcupine.Operation{op(0, 0, 5, regInput{Kind: opCreate, Sha: a}, ok), op(1, 0, 5, regInput{Kind: opCreate, Sha: b}, ok)}},
		{"create on an existing key conflicts", true, []porcupine.Operation{op(0, 0, 1, regInput{Kind: opCreate, Sha: a}, ok), op(1, 2, 3, regInput{Kind: opCreate, Sha: b}, conflict)}},
		{"create on a missing key conflicts", false, []porcupine.Operation{op(0, 0, 1, regInput{Kind: opCreate, Sha: a}, conflict)}},
		{"two ifMatch on one body both win", false, []porcupine.Operation{op(0, 0, 1, regInput{Kind: opCreate, Sha: a}, ok), op(1, 2, 5, regInput{Kind: opIfMatch, Match: a, Sha: b}, ok), op(2, 2, 5, regInput{Kind: opIfMatch, Match: a, Sha: sum([]byte("c"))}, ok)}},
		{"ifMatch on a missing key conflicts", true, []porcupine.Operation{op(0, 0, 1, regInput{Kind: opIfMatch, Match: a, Sha: b}, conflict)}},
		{"overwrite after create", true, []porcupine.Operation{op(0, 0, 1, regInput{Kind: opCreate, Sha: a}, ok), op(0, 2, 3, regInput{Kind: opOverwrite, Sha: b}, ok), op(1, 4, 5, regInput{Kind: opRead}, read(b))}},
		{"stale read after overwrite", false, []porcupine.Operation{op(0, 0, 1, regInput{Kind: opCreate, Sha: a}, ok), op(0, 2, 3, regInput{Kind: opOverwrite, Sha: b}, ok), op(1, 4, 5, regInput{Kind: opRead}, read(a))}},
		{"two deletes both delete", false, []porcupine.Operation{op(0, 0, 1, regInput{Kind: opCreate, Sha: a}, ok), op(1, 2, 5, regInput{Kind: opDelete}, ok), op(2, 2, 5, regInput{Kind: opDelete}, ok)}},
		{"delete of a missing key", true, []porcupine.Operation{op(0, 0, 1, regInput{Kind: opDelete}, missing)}},
		{"deleteIfMatch on another body", true, []porcupine.Operation{op(0, 0, 1, regInput{Kind: opCreate, Sha: a}, ok), op(0, 2, 3, regInput{Kind: opDeleteIfMatch, Match: b}, conflict)}},
		{"deleteIfMatch on a missing key", false, []porcupine.Operation{op(0, 0, 1, regInput{Kind: opDeleteIfMatch, Match: b}, conflict)}},
		// An unknown outcome may have happened or not.
		{"unknown create that happened", true, []porcupine.Operation{op(0, 0, 9, regInput{Kind: opCreate, Sha: a}, unknown), op(1, 2, 3, regInput{Kind: opRead}, read(a))}},
		{"unknown create that did not", true, []porcupine.Operation{op(0, 0, 9, regInput{Kind: opCreate, Sha: a}, unknown), op(1, 2, 3, regInput{Kind: opRead}, missing)}},
		{"unknown create cannot happen twice", false, []porcupine.Operation{op(0, 0, 9, regInput{Kind: opCreate, Sha: a}, unknown), op(1, 1, 2, regInput{Kind: opRead}, read(a)), op(1, 3, 4, regInput{Kind: opDelete}, ok), op(1, 5, 6, regInput{Kind: opRead}, read(a))}},
	} {
		if got := porcupine.CheckOperations(registerModel, c.h); got != c.want {
			t.Errorf("%s: linearizable = %v, want %v", c.name, got, c.want)
		}
	}
}
