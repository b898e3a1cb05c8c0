(set-logic ALL)
; benchmark generated from python API
(set-info :status unknown)
(assert
 (not (and (distinct (_ bv0 32) (_ bv2147483648 32)) true)))
(check-sat)
