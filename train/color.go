package train

import "image/color"

func grayColor(v uint8) color.Color { return color.Gray{Y: v} }
