// Command hello is the floor a Go program's start is measured against.
package main

import "fmt"

func main() { fmt.Println("hello") }
