module kubectl-dispatch/tests/cluster/hostile

go 1.26.0
