package pulsar

import (
	"strings"
	"testing"

	"github.com/ackcheck/ackcheck/cluster"
)

// TestBookieHTTPPort: the bookie's admin API listens at the bookie port +
// 1000 unless --bookie-http-port names another (a range of ports too
// narrow for the 1000 apart), and standalone.conf says the same.
func TestBookieHTTPPort(t *testing.T) {
	for _, c := range []struct {
		bookie, http int
		want         string
	}{
		{0, 0, ":24181"},
		{31181, 0, ":32181"},
		{31181, 31182, ":31182"},
	} {
		p, err := OpenCluster(ClusterOptions{Options: cluster.Options{Dir: t.TempDir()}, BookiePort: c.bookie, BookieHTTPPort: c.http})
		if err != nil {
			t.Fatal(err)
		}
		if u := p.BookieHTTPURL(); !strings.HasSuffix(u, c.want) {
			t.Errorf("bookie %d, http %d: %s, want the port %s", c.bookie, c.http, u, c.want)
		}
		if conf := p.standaloneConf(); !strings.Contains(conf, "httpServerPort="+strings.TrimPrefix(c.want, ":")) {
			t.Errorf("bookie %d, http %d: standalone.conf does not set httpServerPort%s", c.bookie, c.http, c.want)
		}
	}
}
