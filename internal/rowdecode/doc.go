// Package rowdecode decodes the rows of a native-protocol ROWS result into maps from column
// name to Go value (the value types are listed on metadata.Row). It serves the metadata
// refresh and the control connection's queries; its errors keep the "metadata:" prefix they
// had when this code lived in package metadata, since users see them through those two.
package rowdecode
