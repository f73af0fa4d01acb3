package drivers

import "github.com/spf13/pflag"

// RegisterNetns registers --netns on fs, once however many drivers call
// it: every driver whose local cluster can run in network namespaces
// reads it (fs.GetString("netns")), and all register on one flag set.
func RegisterNetns(fs *pflag.FlagSet) {
	if fs.Lookup("netns") != nil {
		return
	}
	fs.String("netns", "", "connect from the hub of the network namespaces of a local cluster started with cluster <broker> up --netns: the namespaces' prefix (set by --cluster-dir)")
}
