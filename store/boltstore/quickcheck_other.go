//go:build !unix

package boltstore

import (
	"errors"
	"os"
)

// mapFile is not available here: the quick check reads with ReadAt, and
// PutStream reads a large body into memory.
func mapFile(*os.File, int64) ([]byte, func(), error) {
	return nil, nil, errors.ErrUnsupported
}
