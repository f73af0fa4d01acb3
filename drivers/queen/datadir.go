package queen

// DataDir is node id's data dir (PostgreSQL's for the database, the file
// buffer's for the server), named for file faults: faults.Local reaches
// a local cluster's files through it.
func (q *Cluster) DataDir(id int32) string { return q.dataDir(id) }
