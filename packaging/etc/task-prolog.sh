#!/bin/sh
# Slurm TaskProlog for sites that load no SPANK plugin (docs/deploy.md).
exec /usr/local/bin/sluice attach --while-pid "$SLURM_TASK_PID"
