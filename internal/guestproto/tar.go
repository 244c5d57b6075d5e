package guestproto

// OmittedRecord is the PAX record of a TarOut entry whose content the guest left out,
// over the request's max_bytes: the file's size, in decimal. The entry itself has no
// content.
const OmittedRecord = "PADDOCK.omitted"
