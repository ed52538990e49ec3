module blockipam.dev/forwarder

go 1.26
