#!/bin/sh
# Slurm TaskProlog for sites that load no SPANK plugin (docs/deploy.md):
# TaskProlog=/etc/sluice/task-prolog.sh in slurm.conf.
# Attach every task (or test a variable of the job's own, e.g. [ "$SLUICE" = 1 ] || exit 0).
exec /usr/bin/sluice attach --fs-type lustre --while-pid "$SLURM_TASK_PID"
