// libprofil is built with hidden visibility; only the public API is exported.
#ifndef PROFIL_RUNTIME_EXPORT_H
#define PROFIL_RUNTIME_EXPORT_H
#define PROFIL_EXPORT __attribute__((visibility("default")))
#endif
