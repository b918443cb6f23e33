"""``geo``-setting schedulers, a module each (imported, so registered, by
:func:`dmlsched.schedulers.registration.load_builtin`)."""
