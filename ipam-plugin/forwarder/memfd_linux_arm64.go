package main

// sysMemfdCreate is memfd_create(2) on linux/arm64 (the syscall package does not name it).
const sysMemfdCreate = 279
