package memindex_test

import (
	"testing"

	"github.com/resourced/resourced/index"
	"github.com/resourced/resourced/index/indextest"
	"github.com/resourced/resourced/index/memindex"
)

func TestConformance(t *testing.T) {
	indextest.Run(t, func(t *testing.T) index.Driver { return memindex.New() })
}
