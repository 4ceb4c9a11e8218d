"""The trusted side of the sandbox: the worker process that runs learner code, its confinement (limits,
bubblewrap), its process tree, and how its failures are told."""
