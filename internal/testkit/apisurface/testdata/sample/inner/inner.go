package inner

type Inner struct {
	Field  int
	hidden int
}

func (Inner) Method() {}

func (Inner) private() {}
